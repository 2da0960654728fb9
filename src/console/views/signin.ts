import { html, type Html } from '../html.js';
import { bare } from './layout.js';

export function signInPage(opts: { email?: string; error?: string; formToken: string; next?: string }): Html {
  return bare(
    'Sign in',
    html`<div class="card narrow">
  <p class="brand">credit-gateway</p>
  <h1>Sign in to the console</h1>
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
</div>`,
  );
}
