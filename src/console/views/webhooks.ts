import type { LowCreditsState } from '../../domain/webhooks/ports.js';
import { WEBHOOK_EVENT_TYPES, type DeliveryView, type EndpointCreated, type EndpointView } from '../../domain/webhooks/types.js';
import { html, when, type Html } from '../html.js';
import { allowed, csrfField, page, type PageContext } from './layout.js';

export interface WebhooksPageData {
  endpoints: EndpointView[];
  deliveries: DeliveryView[];
  lowCredits: LowCreditsState;
  created?: EndpointCreated;
  error?: string;
  /** What the add form held when it was refused. */
  form?: { url: string; events: string[] };
}

/** The new endpoint's secret, shown once. */
function createdPanel(created: EndpointCreated): Html {
  return html`<section class="created-key" role="status" aria-labelledby="created-title">
  <h2 id="created-title">Endpoint added</h2>
  <p><strong>Copy the signing secret for ${created.url} now.</strong> It will not be shown again. Verify each delivery's <code>webhook-signature</code> with it.</p>
  <div class="copy-row"><code id="new-secret">${created.secret}</code> <button type="button" data-copy="#new-secret">Copy</button></div>
</section>`;
}

function addForm(ctx: PageContext, data: WebhooksPageData): Html {
  const checked = (type: string) => (data.form ? data.form.events.includes(type) : true);
  return html`<section class="card" aria-labelledby="add-title">
  <h2 id="add-title">Add endpoint</h2>
  <form method="post" action="/console/webhooks" class="stack">
    ${csrfField(ctx.csrfToken)}
    <label for="webhook-url">URL</label>
    <input id="webhook-url" name="url" type="url" required maxlength="2000" autocomplete="off" placeholder="https://example.com/webhooks" value="${data.form?.url ?? ''}">
    <fieldset>
      <legend>Events</legend>
      ${WEBHOOK_EVENT_TYPES.map(
        (type) => html`<label><input type="checkbox" name="events" value="${type}"${checked(type) ? html` checked` : ''}> <code>${type}</code></label> `,
      )}
    </fieldset>
    ${data.error ? html`<p class="error" role="alert">${data.error}</p>` : ''}
    <button type="submit">Add endpoint</button>
  </form>
</section>`;
}

function endpointTable(ctx: PageContext, endpoints: EndpointView[]): Html {
  if (endpoints.length === 0) return html`<p class="empty">No endpoints yet.</p>`;
  return html`<div class="table-wrap"><table class="cards-sm">
  <caption>${endpoints.length} ${endpoints.length === 1 ? 'endpoint' : 'endpoints'}</caption>
  <thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>
  ${endpoints.map(
    (e) => html`<tr>
    <th scope="row"><code>${e.url}</code></th>
    <td data-label="Events">${e.events.join(', ')}</td>
    <td data-label="Status">${e.disabledAt ? html`Disabled (410 Gone) ${when(e.disabledAt)}` : 'Active'}</td>
    <td data-label="Created">${when(e.createdAt)}</td>
    <td>${allowed(ctx, 'webhooks.manage') ? html`<form method="get" action="/console/webhooks/${e.id}/delete"><button type="submit" class="danger secondary" aria-label="Delete ${e.url}">Delete</button></form>` : ''}</td>
  </tr>`,
  )}
  </tbody>
</table></div>`;
}

function lastAttempt(d: DeliveryView): string {
  const last = d.attempts.at(-1);
  if (!last) return 'not yet attempted';
  return last.statusCode !== null ? `HTTP ${last.statusCode}` : (last.error ?? 'no answer');
}

function deliveryTable(ctx: PageContext, deliveries: DeliveryView[], endpoints: EndpointView[]): Html {
  if (deliveries.length === 0) return html`<p class="empty">No deliveries yet.</p>`;
  const urlOf = new Map(endpoints.map((e) => [e.id, e.url]));
  return html`<div class="table-wrap"><table class="cards-sm">
  <caption>Recent deliveries, newest first</caption>
  <thead><tr><th scope="col">Event</th><th scope="col">Endpoint</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>
  ${deliveries.map(
    (d) => html`<tr>
    <th scope="row"><code>${d.type}</code> <code class="muted">${d.eventId}</code></th>
    <td data-label="Endpoint">${urlOf.get(d.endpointId) ?? 'deleted endpoint'}</td>
    <td data-label="Status"><span class="badge ${d.status === 'succeeded' ? 'completed' : d.status}">${d.status}</span>${d.nextAttemptAt && d.status === 'pending' ? html` next ${when(d.nextAttemptAt)}` : ''}</td>
    <td data-label="Attempts">${d.attempts.length}: ${lastAttempt(d)}${d.attempts.length ? html` ${when(d.attempts.at(-1)!.at)}` : ''}</td>
    <td data-label="Created">${when(d.createdAt)}</td>
    <td>${
      urlOf.has(d.endpointId) && allowed(ctx, 'webhooks.manage')
        ? html`<form method="post" action="/console/webhooks/deliveries/${d.id}/resend">${csrfField(ctx.csrfToken)}<button type="submit" class="secondary" aria-label="Resend ${d.type} ${d.eventId}">Resend</button></form>`
        : ''
    }</td>
  </tr>`,
  )}
  </tbody>
</table></div>`;
}

function thresholdForm(ctx: PageContext, state: LowCreditsState): Html {
  return html`<section class="card" aria-labelledby="threshold-title">
  <h2 id="threshold-title">Low-balance alert</h2>
  <p><code>credits.low</code> is sent once when a charge takes the balance below this threshold, and again only after the balance has been back at or above it.</p>
  <form method="post" action="/console/webhooks/threshold" class="stack">
    ${csrfField(ctx.csrfToken)}
    <label for="low-threshold">Low-balance threshold</label>
    <input id="low-threshold" name="threshold" type="number" min="0" step="1" required value="${state.threshold}">
    <button type="submit">Save threshold</button>
  </form>
</section>`;
}

/** Every event type, as the add form offers them: `a`, `b` and `c`. */
function eventList(): Html {
  const codes = WEBHOOK_EVENT_TYPES.map((type) => html`<code>${type}</code>`);
  return html`${codes.slice(0, -1).map((code, i) => html`${i > 0 ? ', ' : ''}${code}`)} and ${codes.at(-1)!}`;
}

export function webhooksPage(ctx: PageContext, data: WebhooksPageData): Html {
  return page(
    ctx,
    'Webhooks',
    html`<p class="lead">Endpoints receive ${eventList()} as signed POST requests (Standard Webhooks). Failed deliveries are retried for about three days.</p>
${data.created ? createdPanel(data.created) : ''}
${allowed(ctx, 'webhooks.manage') ? addForm(ctx, data) : ''}
<h2>Endpoints</h2>
${endpointTable(ctx, data.endpoints)}
<h2>Deliveries</h2>
${deliveryTable(ctx, data.deliveries, data.endpoints)}
${allowed(ctx, 'webhooks.manage') ? thresholdForm(ctx, data.lowCredits) : ''}`,
  );
}

/** Delete leads here: a confirmation before the endpoint goes. */
export function confirmDeleteEndpointPage(ctx: PageContext, endpoint: EndpointView): Html {
  return page(
    ctx,
    'Delete endpoint',
    html`<section role="dialog" aria-labelledby="confirm-title" class="card">
  <h2 id="confirm-title">Delete the endpoint ${endpoint.url}?</h2>
  <p>No more events are sent to it, retries included. This cannot be undone.</p>
  <form method="post" action="/console/webhooks/${endpoint.id}/delete" class="actions">
    ${csrfField(ctx.csrfToken)}
    <button type="submit" class="danger">Delete endpoint</button> <a href="/console/webhooks">Cancel</a>
  </form>
</section>`,
  );
}
