import type { UsageRow } from '../../domain/usage/types.js';
import { day, html, type Html } from '../html.js';
import { dailyBarChart, daysBetween } from './charts.js';
import { page, type PageContext } from './layout.js';

export function usagePage(ctx: PageContext, opts: { rows: UsageRow[]; from: Date; to: Date; sourceName: (source: string) => string; error?: string }): Html {
  const days = daysBetween(opts.from, opts.to);
  const credits = (service: string) => days.map((d) => opts.rows.filter((r) => r.service === service && r.day.getTime() === d.getTime()).reduce((s, r) => s + r.credits - r.refunded, 0));
  const query = `from=${day(opts.from)}&to=${day(opts.to)}`;
  return page(
    ctx,
    'Usage',
    html`<form method="get" action="/console/usage" class="filters">
  <div><label for="from">From</label><input id="from" name="from" type="date" value="${day(opts.from)}"></div>
  <div><label for="to">To</label><input id="to" name="to" type="date" value="${day(opts.to)}"></div>
  <button type="submit">Show</button>
</form>
${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
${dailyBarChart('Credits spent per day', {
  days,
  series: [
    { name: 'Definition lookups', className: 's-definitions', values: credits('definitions') },
    { name: 'Images', className: 's-images', values: credits('images') },
  ],
})}
<p><a href="/console/usage.csv?${query}" download>Download CSV</a></p>
${
  opts.rows.length === 0
    ? html`<p class="empty">No charged calls in this range.</p>`
    : html`<div class="table-wrap"><table class="cards-sm">
  <caption>Charged calls per day, service and key (UTC days)</caption>
  <thead><tr><th scope="col">Day</th><th scope="col">Service</th><th scope="col">Key</th><th scope="col" class="num">Calls</th><th scope="col" class="num">Credits</th><th scope="col" class="num">Refunded</th></tr></thead>
  <tbody>
  ${opts.rows.map(
    (r) => html`<tr><td data-label="Day">${day(r.day)}</td><td data-label="Service">${r.service === 'images' ? 'Images' : 'Definitions'}</td><td data-label="Key">${opts.sourceName(r.source)}</td><td data-label="Calls" class="num">${r.calls}</td><td data-label="Credits" class="num">${r.credits}</td><td data-label="Refunded" class="num">${r.refunded}</td></tr>`,
  )}
  </tbody>
</table></div>`
}`,
  );
}
