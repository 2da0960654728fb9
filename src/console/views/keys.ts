import type { CreatedKey, KeySummary } from '../../domain/keys/index.js';
import { html, when, type Html } from '../html.js';
import { allowed, csrfField, page, type PageContext } from './layout.js';

/** The new key, shown once. */
export function createdKeyPanel(key: Pick<CreatedKey, 'key' | 'name'>): Html {
  return html`<div class="created-key">
  <p><strong>Copy the key for “${key.name}” now.</strong> It will not be shown again: only its hash is stored.</p>
  <div class="copy-row"><code id="new-key">${key.key}</code> <button type="button" data-copy="#new-key">Copy</button></div>
</div>`;
}

export function keysPage(ctx: PageContext, keys: KeySummary[], opts: { created?: CreatedKey; error?: string; name?: string } = {}): Html {
  const active = keys.filter((k) => !k.deletedAt);
  return page(
    ctx,
    'API keys',
    html`<p class="lead">Keys authenticate calls to the REST and GraphQL APIs (<code>Authorization: Bearer wi_live_…</code>). Keep them out of source control; use one per environment; rotate by creating a new key and deleting the old one.</p>
${allowed(ctx, 'keys.manage') ? html`<p><button type="button" data-open="add-key-dialog" id="add-key">Add Key</button></p>` : ''}
${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
${
  opts.created
    ? html`<dialog open id="created-dialog" aria-labelledby="created-title" aria-modal="false"><h2 id="created-title">Key created</h2>${createdKeyPanel(opts.created)}<form method="dialog"><button type="submit" class="secondary" data-close>Done</button></form></dialog>`
    : ''
}
<dialog id="add-key-dialog" aria-labelledby="add-key-title">
  <h2 id="add-key-title">Add Key</h2>
  <form method="post" action="/console/keys" class="stack" data-create-key>
    ${csrfField(ctx.csrfToken)}
    <label for="key-name">Name</label>
    <input id="key-name" name="name" required maxlength="100" autocomplete="off" value="${opts.name ?? ''}" aria-describedby="key-name-hint">
    <p id="key-name-hint" class="hint">What the key is for, e.g. “production server”.</p>
    <p class="error" role="alert" data-error hidden></p>
    <div class="actions"><button type="submit">Create Key</button> <button type="button" class="secondary" data-close>Cancel</button></div>
  </form>
  <div data-created hidden></div>
</dialog>
<dialog id="delete-key-dialog" aria-labelledby="delete-title">
  <h2 id="delete-title">Delete key</h2>
  <p>Delete “<span data-key-name></span>”? Requests using it fail at once. This cannot be undone.</p>
  <form method="post" data-delete-form class="actions">
    ${csrfField(ctx.csrfToken)}
    <button type="submit" class="danger">Delete key</button> <button type="button" class="secondary" data-close>Cancel</button>
  </form>
</dialog>
${
  active.length === 0
    ? html`<p class="empty">No keys yet.${allowed(ctx, 'keys.manage') ? html` Choose <strong>Add Key</strong> to create one.` : ''}</p>`
    : html`<div class="table-wrap"><table class="cards-sm">
  <caption>${active.length} active ${active.length === 1 ? 'key' : 'keys'}</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Last used</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>
  ${active.map(
    (k) => html`<tr>
    <th scope="row">${k.name}</th>
    <td data-label="Key"><code>${k.prefix}…</code></td>
    <td data-label="Last used">${when(k.lastUsedAt)}</td>
    <td data-label="Created">${when(k.createdAt)}</td>
    <td>${allowed(ctx, 'keys.manage') ? html`<form method="get" action="/console/keys/${k.id}/delete"><button type="submit" class="danger secondary" data-delete-key="${k.id}" data-key-name="${k.name}">Delete</button></form>` : ''}</td>
  </tr>`,
  )}
  </tbody>
</table></div>`
}`,
  );
}

/** Without JavaScript, Delete leads here: the same confirmation as the dialog, as a page. */
export function confirmDeletePage(ctx: PageContext, key: KeySummary): Html {
  return page(
    ctx,
    'Delete key',
    html`<section role="dialog" aria-labelledby="confirm-title" class="card">
  <h2 id="confirm-title">Delete “${key.name}”?</h2>
  <p>Requests using <code>${key.prefix}…</code> fail at once. This cannot be undone.</p>
  <form method="post" action="/console/keys/${key.id}/delete" class="actions">
    ${csrfField(ctx.csrfToken)}
    <button type="submit" class="danger">Delete key</button> <a href="/console/keys">Cancel</a>
  </form>
</section>`,
  );
}
