import { html, type Html } from '../html.js';
import { bare } from './layout.js';

/** The pages of a visitor who is not signed in: sign-up, its answer, and what a used link says. */

export interface SignUpForm {
  accountName?: string;
  email?: string;
  error?: string;
  formToken: string;
}

export function signUpPage(form: SignUpForm): Html {
  return bare(
    'Create an account',
    html`<div class="card narrow">
  <p class="brand">credit-gateway</p>
  <h1>Create an account</h1>
  ${form.error ? html`<p class="error" role="alert">${form.error}</p>` : ''}
  <form method="post" action="/console/sign-up" class="stack">
    <input type="hidden" name="_csrf" value="${form.formToken}">
    <label for="accountName">Account name</label>
    <input id="accountName" name="accountName" type="text" autocomplete="organization" required maxlength="200" value="${form.accountName ?? ''}">
    <label for="email">Email</label>
    <input id="email" name="email" type="email" autocomplete="email" required maxlength="254" value="${form.email ?? ''}">
    <label for="password">Password</label>
    <input id="password" name="password" type="password" autocomplete="new-password" required minlength="12" maxlength="128" aria-describedby="password-hint">
    <p class="hint" id="password-hint">At least 12 characters; a well-known password is refused.</p>
    <button type="submit">Create account</button>
  </form>
  <p>Already have an account? <a href="/console/sign-in">Sign in</a></p>
</div>`,
  );
}

/** The one answer to a sign-up, a new address or a taken one alike. */
export function checkEmailPage(): Html {
  return bare(
    'Check your email',
    html`<div class="card narrow">
  <p class="brand">credit-gateway</p>
  <h1>Check your email</h1>
  <p>We sent a link to the address you gave. Open it within 24 hours to finish: your account is created then.</p>
  <p class="hint">No email after a few minutes? Look in your spam folder, or <a href="/console/sign-up">try again</a>.</p>
  <p><a href="/console/sign-in">Back to sign in</a></p>
</div>`,
  );
}

/**
 * A verification link opened outside the browser that sent the form: the sign-up password first. The
 * token goes in the form's body, not back into a URL.
 */
export function finishSignUpPage(opts: { token: string; formToken: string; error?: string }): Html {
  return bare(
    'Finish sign-up',
    html`<div class="card narrow">
  <p class="brand">credit-gateway</p>
  <h1>Finish sign-up</h1>
  <p>This link was opened in another browser than the one the sign-up form was sent from. Enter the password chosen at sign-up to create the account.</p>
  ${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
  <form method="post" action="/console/verify-email" class="stack">
    <input type="hidden" name="_csrf" value="${opts.formToken}">
    <input type="hidden" name="token" value="${opts.token}">
    <label for="password">Password</label>
    <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="128">
    <button type="submit">Finish sign-up</button>
  </form>
  <p class="hint">Did not sign up? Ignore the email: nothing is created without the password.</p>
</div>`,
  );
}

/** A verification, reset or invitation link that was used, expired or never existed. */
export function linkExpiredPage(again: { href: string; label: string }): Html {
  return bare(
    'Link expired',
    html`<div class="card narrow">
  <p class="brand">credit-gateway</p>
  <h1>Link expired</h1>
  <p class="error" role="alert">This link has expired or was already used</p>
  <p><a href="${again.href}">${again.label}</a></p>
  <p><a href="/console/sign-in">Back to sign in</a></p>
</div>`,
  );
}

/** Too many emails for this address or from this client. */
export function tooManyEmailsPage(title: string, retryAfterSeconds: number, back: string): Html {
  const minutes = Math.ceil(retryAfterSeconds / 60);
  return bare(
    title,
    html`<div class="card narrow">
  <p class="brand">credit-gateway</p>
  <h1>${title}</h1>
  <p class="error" role="alert">Too many attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.</p>
  <p><a href="${back}">Back</a></p>
</div>`,
  );
}
