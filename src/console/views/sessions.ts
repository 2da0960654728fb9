import type { SessionRecord } from '../../domain/console/records.js';
import { html, when, type Html } from '../html.js';
import { csrfField, page, type PageContext } from './layout.js';

export function sessionsPage(ctx: PageContext, opts: { sessions: SessionRecord[]; currentId: string; notice?: string }): Html {
  const others = opts.sessions.filter((s) => s.id !== opts.currentId);
  return page(
    ctx,
    'Sessions',
    html`<p class="lead">Where you are signed in. A session ends after 30 minutes without activity, 12 hours after sign-in, or when you end it here.</p>
${opts.notice ? html`<p class="notice" role="status">${opts.notice}</p>` : ''}
<div class="table-wrap"><table class="cards-sm">
  <caption>Active sessions</caption>
  <thead><tr><th scope="col">Signed in</th><th scope="col">Last active</th><th scope="col">IP address</th><th scope="col">Browser</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>
  ${opts.sessions.map(
    (s) => html`<tr>
    <td data-label="Signed in">${when(s.createdAt)}</td><td data-label="Last active">${when(s.lastSeenAt)}</td><td data-label="IP address">${s.ip ?? '—'}</td><td class="ua" data-label="Browser">${s.userAgent || '—'}</td>
    <td>${
      s.id === opts.currentId
        ? html`<strong>This session</strong>`
        : html`<form method="post" action="/console/sessions/${s.id}/end">${csrfField(ctx.csrfToken)}<button type="submit" class="secondary">End session</button></form>`
    }</td>
  </tr>`,
  )}
  </tbody>
</table></div>
${
  others.length
    ? html`<form method="post" action="/console/sessions/end-others">${csrfField(ctx.csrfToken)}<button type="submit" class="danger">End all other sessions</button></form>`
    : ''
}`,
  );
}
