import type { TwoFactorStatus } from '../../domain/identity/two-factor.js';
import { html, type Html } from '../html.js';
import { bare, csrfField, page, type PageContext } from './layout.js';

/** Settings' second-factor section: set it up, or (enabled) how many recovery codes are left and disable it. */
export function twoFactorSection(ctx: PageContext, status: TwoFactorStatus, error?: string): Html {
  return html`<section class="card" aria-labelledby="two-factor-title">
  <h2 id="two-factor-title">Two-factor authentication</h2>
  ${error ? html`<p class="error" role="alert">${error}</p>` : ''}
  ${
    status.enabled
      ? html`<p><strong>On.</strong> Signing in asks for a code from your authenticator app after your password.
  ${status.recoveryCodesLeft} of 10 recovery codes left.</p>
  <form method="post" action="/console/settings/two-factor/disable" class="stack">
    ${csrfField(ctx.csrfToken)}
    <label for="disablePassword">Current password</label>
    <input id="disablePassword" name="password" type="password" autocomplete="current-password" required maxlength="512">
    <button type="submit" class="danger">Disable two-factor authentication</button>
  </form>`
      : html`<p><strong>Off.</strong> Protect your sign-in with a code from an authenticator app (Google Authenticator, 1Password, Authy…) after your password.</p>
  <form method="post" action="/console/settings/two-factor/setup">
    ${csrfField(ctx.csrfToken)}
    <button type="submit">Set up two-factor authentication</button>
  </form>`
  }
</section>`;
}

/** Set-up: the QR code (drawn by the gateway, a data: image), the secret as text, and the code that confirms it. */
export function twoFactorSetupPage(ctx: PageContext, opts: { qrDataUrl: string; secret: string; error?: string }): Html {
  return page(
    ctx,
    'Set up two-factor authentication',
    html`<div class="card narrow-card">
  <ol class="steps">
    <li>Scan this QR code with your authenticator app:
      <p><img class="qr" src="${opts.qrDataUrl}" width="200" height="200" alt="QR code for your authenticator app"></p>
      <p>Or type this key into it: <code class="secret">${opts.secret.replace(/(.{4})/g, '$1 ').trim()}</code></p>
    </li>
    <li>Enter the 6-digit code the app shows.</li>
  </ol>
  ${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
  <form method="post" action="/console/settings/two-factor/enable" class="stack">
    ${csrfField(ctx.csrfToken)}
    <label for="code">Code</label>
    <input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" required maxlength="7">
    <button type="submit">Enable</button>
  </form>
  <p><a href="/console/settings">Cancel</a></p>
</div>`,
  );
}

/** Shown once, right after enabling: the recovery codes in clear (only their hashes are kept). */
export function recoveryCodesPage(ctx: PageContext, codes: string[]): Html {
  return page(
    ctx,
    'Recovery codes',
    html`<p class="notice" role="status">Two-factor authentication is on.</p>
<div class="card narrow-card">
  <p>Keep these recovery codes somewhere safe. Each one signs you in once in place of a code from your app, if you lose it. <strong>They are shown only now.</strong></p>
  <ul class="recovery-codes" aria-label="Recovery codes">
    ${codes.map((c) => html`<li><code>${c}</code></li>`)}
  </ul>
  <p><a href="/console/settings">Done</a></p>
</div>`,
  );
}

/** The second step of signing in: the password was right, the code is awaited. */
export function secondFactorPage(opts: { error?: string; formToken: string; next?: string }): Html {
  return bare(
    'Two-factor authentication',
    html`<div class="card narrow">
  <p class="brand">credit-gateway</p>
  <h1>Two-factor authentication</h1>
  ${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
  <form method="post" action="/console/sign-in/verify" class="stack">
    <input type="hidden" name="_csrf" value="${opts.formToken}">
    ${opts.next ? html`<input type="hidden" name="next" value="${opts.next}">` : ''}
    <label for="code">Authentication code</label>
    <input id="code" name="code" type="text" autocomplete="one-time-code" required maxlength="64" aria-describedby="code-hint">
    <p class="hint" id="code-hint">The 6-digit code from your authenticator app, or one of your recovery codes.</p>
    <button type="submit">Verify</button>
  </form>
  <p><a href="/console/sign-in${opts.next ? `?next=${encodeURIComponent(opts.next)}` : ''}">Cancel</a></p>
</div>`,
  );
}
