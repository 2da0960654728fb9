import { AUDIT_EVENTS, type AuditEntry } from '../../domain/audit/types.js';
import { day, html, when, type Html } from '../html.js';
import { page, type PageContext } from './layout.js';

/** What people read in the Event column. */
export const EVENT_LABELS: Record<(typeof AUDIT_EVENTS)[number], string> = {
  'account.created': 'Account created',
  'key.created': 'Key created',
  'key.deleted': 'Key deleted',
  'key.updated': 'Key updated',
  'key.rolled': 'Key rolled',
  'credits.granted': 'Credits granted',
  'credits.refunded': 'Credits refunded',
  'user.created': 'User created',
  'user.deleted': 'User deleted',
  'console.signed_in': 'Signed in',
  'console.sign_in_failed': 'Sign-in failed',
  'console.signed_out': 'Signed out',
  'console.session_ended': 'Session ended',
  'client_token.created': 'Client token created',
  'member.invited': 'Member invited',
  'member.invitation_revoked': 'Invitation revoked',
  'member.joined': 'Member joined',
  'member.removed': 'Member removed',
  'member.role_changed': 'Role changed',
  'member.left': 'Member left',
  'account.2fa_requirement_changed': 'Two-factor requirement changed',
  'user.password_changed': 'Password changed',
  'user.password_reset': 'Password reset',
  'user.2fa_enabled': 'Two-factor authentication enabled',
  'user.2fa_disabled': 'Two-factor authentication disabled',
};

/** The Details column: what the entry is about, in words. */
export function describe(e: AuditEntry): string {
  const parts: string[] = [];
  if (e.keyPrefix) parts.push(`key ${e.keyPrefix}…`);
  if (typeof e.details?.name === 'string') parts.push(`“${e.details.name}”`);
  if (e.amount !== null && e.amount !== undefined) parts.push(`${e.amount} credits`);
  if (typeof e.details?.reason === 'string') parts.push(`reason: ${e.details.reason}`);
  if (typeof e.details?.email === 'string') parts.push(String(e.details.email));
  if (typeof e.details?.from === 'string' && typeof e.details?.to === 'string') parts.push(`${e.details.from} → ${e.details.to}`);
  else if (typeof e.details?.role === 'string') parts.push(`role ${e.details.role}`);
  if (Array.isArray(e.details?.origins)) parts.push(`for ${e.details.origins.map(String).join(', ')}`);
  if (e.userAgent) parts.push(e.userAgent.length > 60 ? `${e.userAgent.slice(0, 60)}…` : e.userAgent);
  return parts.join(' · ');
}

export interface AuditFilterForm {
  event: string;
  from: Date;
  to: Date;
}

export function auditPage(ctx: PageContext, opts: { entries: AuditEntry[]; filter: AuditFilterForm; limit: number; error?: string }): Html {
  const { filter } = opts;
  const query = new URLSearchParams({ ...(filter.event ? { event: filter.event } : {}), from: day(filter.from), to: day(filter.to) }).toString();
  return page(
    ctx,
    'Audit log',
    html`<p class="lead">Who changed what, and from which address. Entries are kept 90 days.</p>
<form method="get" action="/console/audit" class="filters">
  <div><label for="event">Event</label>
    <select id="event" name="event">
      <option value="">All events</option>
      ${AUDIT_EVENTS.map((e) => html`<option value="${e}"${filter.event === e ? html` selected` : ''}>${EVENT_LABELS[e]}</option>`)}
    </select></div>
  <div><label for="from">From</label><input id="from" name="from" type="date" value="${day(filter.from)}"></div>
  <div><label for="to">To</label><input id="to" name="to" type="date" value="${day(filter.to)}"></div>
  <button type="submit">Filter</button>
</form>
${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
<p>Export this range: <a href="/console/audit.jsonl?${query}" download>JSON lines</a> · <a href="/console/audit.csv?${query}" download>CSV</a></p>
${
  opts.entries.length === 0
    ? html`<p class="empty">No entries in this range.</p>`
    : html`<div class="table-wrap"><table class="cards-sm">
  <caption>${opts.entries.length === opts.limit ? `The newest ${opts.limit} entries (export for all)` : `${opts.entries.length} entries, newest first`}</caption>
  <thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Actor</th><th scope="col">IP address</th><th scope="col">Details</th></tr></thead>
  <tbody>
  ${opts.entries.map(
    (e) =>
      html`<tr><td data-label="Time">${when(e.createdAt)}</td><td data-label="Event">${EVENT_LABELS[e.event] ?? e.event}</td><td data-label="Actor">${e.actor}</td><td data-label="IP address">${e.ip ?? '—'}</td><td data-label="Details">${describe(e)}</td></tr>`,
  )}
  </tbody>
</table></div>`
}`,
  );
}
