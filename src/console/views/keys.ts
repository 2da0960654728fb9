import type { CreatedKey, KeySummary } from '../../domain/keys/index.js';
import { KEY_PERMISSION_LABELS, KEY_PERMISSIONS } from '../../domain/keys/permissions.js';
import { EXPIRY_CHOICES, GRACE_CHOICES } from '../../domain/keys/settings.js';
import { html, when, type Html } from '../html.js';
import { allowed, csrfField, page, type PageContext } from './layout.js';

/** The new key, shown once. */
export function createdKeyPanel(key: Pick<CreatedKey, 'key' | 'name'>): Html {
  return html`<div class="created-key">
  <p><strong>Copy the key for “${key.name}” now.</strong> It will not be shown again: only its hash is stored.</p>
  <div class="copy-row"><code id="new-key">${key.key}</code> <button type="button" data-copy="#new-key">Copy</button></div>
</div>`;
}

/** What the keys page shows besides the list: a key just created or rolled, or a refused form. */
export interface KeysPageOptions {
  created?: CreatedKey;
  /** The created key came from a roll. */
  rolled?: boolean;
  error?: string;
  name?: string;
}

/** The settings fields of the create and edit dialogs (`key`: the key edited; `idp`: unique id prefix). */
function settingsFields(idp: string, key?: KeySummary): Html {
  const now = Date.now();
  const expired = key?.expiresAt && key.expiresAt.getTime() <= now;
  return html`<label for="${idp}-expires">Expires</label>
    <select id="${idp}-expires" name="expires">
      ${key?.expiresAt ? html`<option value="keep" selected>Unchanged (${expired ? 'expired' : key.expiresAt.toISOString().slice(0, 16).replace('T', ' ') + ' UTC'})</option>` : ''}
      ${EXPIRY_CHOICES.map((c) => html`<option value="${c.value}"${!key?.expiresAt && c.value === 'never' ? ' selected' : ''}>${c.label}</option>`)}
    </select>
    <label for="${idp}-credit-limit">Credit limit</label>
    <input id="${idp}-credit-limit" name="creditLimit" type="number" min="1" step="1" inputmode="numeric" value="${key?.creditLimit ?? ''}" aria-describedby="${idp}-credit-limit-hint">
    <p id="${idp}-credit-limit-hint" class="hint">The most this key may spend; empty: no limit beyond the balance.</p>
    <label for="${idp}-refill">Refill</label>
    <select id="${idp}-refill" name="refill" aria-describedby="${idp}-refill-hint">
      <option value=""${key?.refill ? '' : ' selected'}>No refill</option>
      <option value="daily"${key?.refill === 'daily' ? ' selected' : ''}>Daily</option>
      <option value="monthly"${key?.refill === 'monthly' ? ' selected' : ''}>Monthly</option>
    </select>
    <p id="${idp}-refill-hint" class="hint">Only with a credit limit: credits left go back to the limit at 00:00 UTC (daily) or on the 1st (monthly).</p>
    <label for="${idp}-rate-limit">Rate limit per minute</label>
    <input id="${idp}-rate-limit" name="rateLimitPerMinute" type="number" min="1" step="1" inputmode="numeric" value="${key?.rateLimitPerMinute ?? ''}" aria-describedby="${idp}-rate-limit-hint">
    <p id="${idp}-rate-limit-hint" class="hint">Empty: the server's limit.</p>
    <fieldset class="permissions">
      <legend>Permissions</legend>
      <input type="hidden" name="permissionsShown" value="1">
      ${KEY_PERMISSIONS.map(
        (p) => html`<label class="check"><input type="checkbox" name="permissions" value="${p}"${!key || key.permissions.includes(p) ? ' checked' : ''}> ${KEY_PERMISSION_LABELS[p]}</label>`,
      )}
    </fieldset>`;
}

/** `—` when unset, `Expired` once past, else the instant. */
function expiresCell(key: KeySummary, now: number): Html {
  if (!key.expiresAt) return html`—`;
  return key.expiresAt.getTime() <= now ? html`<span class="badge failed">Expired</span>` : when(key.expiresAt);
}

function creditsCell(key: KeySummary): Html | string {
  if (key.creditLimit === null) return '—';
  return `${key.creditsLeft ?? key.creditLimit} of ${key.creditLimit}${key.refill ? ` (${key.refill})` : ''}`;
}

export function keysPage(ctx: PageContext, keys: KeySummary[], opts: KeysPageOptions = {}): Html {
  const active = keys.filter((k) => !k.deletedAt);
  const now = Date.now();
  return page(
    ctx,
    'API keys',
    html`<p class="lead">Keys authenticate calls to the REST and GraphQL APIs (<code>Authorization: Bearer wi_live_…</code>). Keep them out of source control; use one per environment; rotate with <strong>Roll key</strong>, which can keep the old key working for a while so a deploy never races the switch.</p>
${allowed(ctx, 'keys.manage') ? html`<p><button type="button" data-open="add-key-dialog" id="add-key">Add Key</button></p>` : ''}
${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
${
  opts.created
    ? html`<dialog open id="created-dialog" aria-labelledby="created-title" aria-modal="false"><h2 id="created-title">${opts.rolled ? 'Key rolled' : 'Key created'}</h2>${createdKeyPanel(opts.created)}<form method="dialog"><button type="submit" class="secondary" data-close>Done</button></form></dialog>`
    : ''
}
<dialog id="add-key-dialog" aria-labelledby="add-key-title">
  <h2 id="add-key-title">Add Key</h2>
  <form method="post" action="/console/keys" class="stack" data-create-key>
    ${csrfField(ctx.csrfToken)}
    <label for="key-name">Name</label>
    <input id="key-name" name="name" required maxlength="100" autocomplete="off" value="${opts.name ?? ''}" aria-describedby="key-name-hint">
    <p id="key-name-hint" class="hint">What the key is for, e.g. “production server”.</p>
    ${settingsFields('new')}
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
${allowed(ctx, 'keys.manage') ? active.map((k) => editDialog(ctx, k)) : ''}
${allowed(ctx, 'keys.manage') ? active.map((k) => rollDialog(ctx, k)) : ''}
${
  active.length === 0
    ? html`<p class="empty">No keys yet.${allowed(ctx, 'keys.manage') ? html` Choose <strong>Add Key</strong> to create one.` : ''}</p>`
    : html`<div class="table-wrap"><table class="cards-sm">
  <caption>${active.length} active ${active.length === 1 ? 'key' : 'keys'}</caption>
  <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Expires</th><th scope="col">Credits left</th><th scope="col">Last used</th><th scope="col">Created</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>
  ${active.map(
    (k) => html`<tr>
    <th scope="row">${k.name}</th>
    <td data-label="Key"><code>${k.prefix}…</code></td>
    <td data-label="Expires">${expiresCell(k, now)}</td>
    <td data-label="Credits left">${creditsCell(k)}</td>
    <td data-label="Last used">${when(k.lastUsedAt)}</td>
    <td data-label="Created">${when(k.createdAt)}</td>
    <td class="row-actions">${
      allowed(ctx, 'keys.manage')
        ? html`
      <form method="get" action="/console/keys/${k.id}/edit"><button type="submit" class="secondary" data-open="edit-key-${k.id}">Edit</button></form>
      <form method="get" action="/console/keys/${k.id}/roll"><button type="submit" class="secondary" data-open="roll-key-${k.id}">Roll key</button></form>
      <form method="get" action="/console/keys/${k.id}/delete"><button type="submit" class="danger secondary" data-delete-key="${k.id}" data-key-name="${k.name}">Delete</button></form>`
        : ''
    }</td>
  </tr>`,
  )}
  </tbody>
</table></div>`
}`,
  );
}

function editForm(ctx: PageContext, key: KeySummary, idp: string): Html {
  return html`<form method="post" action="/console/keys/${key.id}/edit" class="stack" data-edit-key>
    ${csrfField(ctx.csrfToken)}
    ${settingsFields(idp, key)}
    <p class="error" role="alert" data-error hidden></p>
    <div class="actions"><button type="submit">Save</button> <button type="button" class="secondary" data-close>Cancel</button></div>
  </form>`;
}

function editDialog(ctx: PageContext, key: KeySummary): Html {
  return html`<dialog id="edit-key-${key.id}" aria-labelledby="edit-title-${key.id}">
  <h2 id="edit-title-${key.id}">Edit “${key.name}”</h2>
  ${editForm(ctx, key, `edit-${key.id}`)}
</dialog>`;
}

function rollForm(ctx: PageContext, key: KeySummary, idp: string): Html {
  return html`<form method="post" action="/console/keys/${key.id}/roll" class="stack" data-roll-key>
    ${csrfField(ctx.csrfToken)}
    <p>A new key replaces <code>${key.prefix}…</code> with the same name and settings. Deploy it, then let the old one go.</p>
    <label for="${idp}-grace">Keep the old key working for</label>
    <select id="${idp}-grace" name="grace">
      ${GRACE_CHOICES.map((c) => html`<option value="${c.value}"${c.value === '1h' ? ' selected' : ''}>${c.label}</option>`)}
    </select>
    <p class="error" role="alert" data-error hidden></p>
    <div class="actions"><button type="submit">Roll key</button> <button type="button" class="secondary" data-close>Cancel</button></div>
  </form>`;
}

function rollDialog(ctx: PageContext, key: KeySummary): Html {
  return html`<dialog id="roll-key-${key.id}" aria-labelledby="roll-title-${key.id}">
  <h2 id="roll-title-${key.id}">Roll “${key.name}”</h2>
  ${rollForm(ctx, key, `roll-${key.id}`)}
  <div data-created hidden></div>
</dialog>`;
}

/** Without JavaScript, Edit leads here: the dialog's form as a page. */
export function editKeyPage(ctx: PageContext, key: KeySummary, error?: string): Html {
  return page(
    ctx,
    'Edit key',
    html`<section role="dialog" aria-labelledby="edit-page-title" class="card">
  <h2 id="edit-page-title">Edit “${key.name}”</h2>
  ${error ? html`<p class="error" role="alert">${error}</p>` : ''}
  ${editForm(ctx, key, 'edit')}
  <p><a href="/console/keys">Back to API keys</a></p>
</section>`,
  );
}

/** Without JavaScript, Roll key leads here. */
export function rollKeyPage(ctx: PageContext, key: KeySummary, error?: string): Html {
  return page(
    ctx,
    'Roll key',
    html`<section role="dialog" aria-labelledby="roll-page-title" class="card">
  <h2 id="roll-page-title">Roll “${key.name}”</h2>
  ${error ? html`<p class="error" role="alert">${error}</p>` : ''}
  ${rollForm(ctx, key, 'roll')}
  <p><a href="/console/keys">Back to API keys</a></p>
</section>`,
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
