import { html, type Html } from '../html.js';

export interface DailySeries {
  /** Days in order (UTC midnights). */
  days: Date[];
  /** Per series name, one value per day. */
  series: { name: string; className: string; values: number[] }[];
}

/**
 * A stacked bar chart of daily values as inline SVG (no script, no library). The figure carries a
 * text summary for assistive technology; the page shows the same numbers in a table.
 */
export function dailyBarChart(title: string, data: DailySeries): Html {
  const width = 720;
  const height = 200;
  const pad = { top: 12, right: 8, bottom: 28, left: 36 };
  const totals = data.days.map((_, i) => data.series.reduce((sum, s) => sum + (s.values[i] ?? 0), 0));
  const max = Math.max(1, ...totals);
  const slot = (width - pad.left - pad.right) / Math.max(1, data.days.length);
  const bar = Math.max(2, slot * 0.7);
  const scale = (v: number) => (v / max) * (height - pad.top - pad.bottom);
  const summary = data.series.map((s) => `${s.name}: ${s.values.reduce((a, b) => a + b, 0)}`).join(', ');
  const bars = data.days.map((d, i) => {
    let y = height - pad.bottom;
    return data.series.map((s) => {
      const h = scale(s.values[i] ?? 0);
      y -= h;
      return h > 0
        ? html`<rect class="${s.className}" x="${(pad.left + i * slot + (slot - bar) / 2).toFixed(1)}" y="${y.toFixed(1)}" width="${bar.toFixed(1)}" height="${h.toFixed(1)}"><title>${d.toISOString().slice(0, 10)} ${s.name}: ${s.values[i]}</title></rect>`
        : '';
    });
  });
  const labelEvery = Math.ceil(data.days.length / 8);
  const labels = data.days.map((d, i) =>
    i % labelEvery === 0 ? html`<text x="${(pad.left + i * slot + slot / 2).toFixed(1)}" y="${height - 8}" text-anchor="middle">${d.toISOString().slice(5, 10)}</text>` : '',
  );
  // On a narrow screen the chart scrolls sideways inside .chart-scroll, which opens at its right end:
  // the newest days first (see console.css).
  return html`<figure class="chart">
  <div class="chart-scroll"><svg viewBox="0 0 ${width} ${height}" role="img" aria-label="${title}. Totals: ${summary}.">
    <line class="axis" x1="${pad.left}" y1="${height - pad.bottom}" x2="${width - pad.right}" y2="${height - pad.bottom}"></line>
    <text x="${pad.left - 6}" y="${pad.top + 4}" text-anchor="end">${max}</text>
    <text x="${pad.left - 6}" y="${height - pad.bottom}" text-anchor="end">0</text>
    ${bars}
    ${labels}
  </svg></div>
  <figcaption>${title} <span class="legend">${data.series.map((s) => html`<span class="key ${s.className}">${s.name}</span>`)}</span></figcaption>
</figure>`;
}

/** Consecutive UTC days from `from` to `to`, inclusive. */
export function daysBetween(from: Date, to: Date): Date[] {
  const days: Date[] = [];
  for (let t = from.getTime(); t <= to.getTime(); t += 86_400_000) days.push(new Date(t));
  return days;
}
