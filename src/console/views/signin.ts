import { html, type Html } from '../html.js';
import { bare } from './layout.js';

export function signInPage(opts: { email?: string; error?: string; notice?: string; formToken: string; next?: string; signupOpen?: boolean }): Html {
  return bare(
    'Sign in',
    html`<div class="card narrow">
  <p class="brand">credit-gateway</p>
  <h1>Sign in to the console</h1>
  ${opts.notice ? html`<p class="notice" role="status">${opts.notice}</p>` : ''}
  ${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
  <form method="post" action="/console/sign-in" class="stack">
    <input type="hidden" name="_csrf" value="${opts.formToken}">
    ${opts.next ? html`<input type="hidden" name="next" value="${opts.next}">` : ''}
    <label for="email">Email</label>
    <input id="email" name="email" type="email" autocomplete="username" required maxlength="254" value="${opts.email ?? ''}">
    <label for="password">Password</label>
    <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="512">
    <button type="submit">Sign in</button>
  </form>
  <p class="links"><a href="/console/forgot-password">Forgot password?</a>${opts.signupOpen ? html` · <a href="/console/sign-up">Create an account</a>` : ''}</p>
</div>`,
  );
}
