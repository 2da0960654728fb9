import { html, type Html } from '../html.js';
import { csrfField, page, type PageContext } from './layout.js';

export interface SettingsView {
  notice?: string;
  passwordError?: string;
  /** The second factor's part of the page (views/two-factor.ts). */
  twoFactor?: Html;
}

/** The signed-in user's own settings: their password, and their second factor. */
export function settingsPage(ctx: PageContext, view: SettingsView): Html {
  return page(
    ctx,
    'Settings',
    html`${view.notice ? html`<p class="notice" role="status">${view.notice}</p>` : ''}
<div class="cards">
<section class="card" aria-labelledby="account-title">
  <h2 id="account-title">Account</h2>
  <dl class="facts">
    <dt>Account name</dt>
    <dd>${ctx.accounts.find((a) => a.id === ctx.accountId)?.name ?? ''}</dd>
    <dt>Account ID</dt>
    <dd><code data-account-id>${ctx.accountId}</code></dd>
  </dl>
  <p class="hint">What the admin CLI (its account option) and support ask for.</p>
</section>
<section class="card" aria-labelledby="password-title">
  <h2 id="password-title">Password</h2>
  ${view.passwordError ? html`<p class="error" role="alert">${view.passwordError}</p>` : ''}
  <form method="post" action="/console/settings/password" class="stack">
    ${csrfField(ctx.csrfToken)}
    <input type="text" name="username" autocomplete="username" value="${ctx.email}" hidden>
    <label for="currentPassword">Current password</label>
    <input id="currentPassword" name="currentPassword" type="password" autocomplete="current-password" required maxlength="512">
    <label for="newPassword">New password</label>
    <input id="newPassword" name="newPassword" type="password" autocomplete="new-password" required minlength="12" maxlength="128" aria-describedby="new-password-hint">
    <p class="hint" id="new-password-hint">At least 12 characters; a well-known password is refused. Your other sessions end.</p>
    <button type="submit">Change password</button>
  </form>
</section>
${view.twoFactor ?? ''}
</div>`,
  );
}
