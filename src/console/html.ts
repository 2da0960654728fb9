/**
 * HTML built by tagged templates: every interpolated value is escaped unless it is already Html, so a
 * key name, a prompt or an audit detail can never become markup. Type-checked with the code, no
 * template engine, no build step.
 */
export class Html {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

type Part = Html | string | number | boolean | null | undefined | readonly Part[];

function render(part: Part): string {
  if (part instanceof Html) return part.value;
  if (Array.isArray(part)) return part.map(render).join('');
  if (part === null || part === undefined || part === false || part === true) return '';
  return escapeHtml(String(part));
}

export function html(strings: TemplateStringsArray, ...parts: Part[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < parts.length; i++) out += render(parts[i] as Part) + strings[i + 1]!;
  return new Html(out);
}

/** Dates as people read them in a table: `2026-11-23 19:04 UTC`. */
export function when(date: Date | null | undefined, fallback = 'Never'): Html {
  if (!date) return html`${fallback}`;
  const iso = date.toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 16).replace('T', ' ')} UTC</time>`;
}

export function day(date: Date): string {
  return date.toISOString().slice(0, 10);
}
