import { html, type Html } from '../html.js';
import { bare } from './layout.js';

export function forgotPasswordPage(opts: { email?: string; error?: string; sent?: boolean; formToken: string }): Html {
  return bare(
    'Forgot password',
    html`<div class="card narrow">
  <p class="brand">credit-gateway</p>
  <h1>Forgot your password?</h1>
  ${opts.sent ? html`<p class="notice" role="status">If an account exists for that email, we sent a link</p>` : ''}
  ${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
  <p>Enter your account's email: we send a link to set a new password, valid for an hour.</p>
  <form method="post" action="/console/forgot-password" class="stack">
    <input type="hidden" name="_csrf" value="${opts.formToken}">
    <label for="email">Email</label>
    <input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${opts.email ?? ''}">
    <button type="submit">Send reset link</button>
  </form>
  <p><a href="/console/sign-in">Back to sign in</a></p>
</div>`,
  );
}

export function resetPasswordPage(opts: { token: string; error?: string; formToken: string }): Html {
  return bare(
    'Set a new password',
    html`<div class="card narrow">
  <p class="brand">credit-gateway</p>
  <h1>Set a new password</h1>
  ${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
  <p>Every session of yours ends when the new password is set.</p>
  <form method="post" action="/console/reset-password" class="stack">
    <input type="hidden" name="_csrf" value="${opts.formToken}">
    <input type="hidden" name="token" value="${opts.token}">
    <label for="newPassword">New password</label>
    <input id="newPassword" name="newPassword" type="password" autocomplete="new-password" required minlength="12" maxlength="128" aria-describedby="password-hint">
    <p class="hint" id="password-hint">At least 12 characters; a well-known password is refused.</p>
    <button type="submit">Set password</button>
  </form>
</div>`,
  );
}
