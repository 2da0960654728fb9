import type { OpenInvitation } from '../../domain/team/invitations.js';
import { html, type Html } from '../html.js';
import { bare } from './layout.js';

/** An invitation link that no longer works. */
export function invitationGonePage(): Html {
  return bare(
    'Invitation',
    html`<div class="card narrow">
  <p class="brand">credit-gateway</p>
  <h1>Invitation</h1>
  <p class="error" role="alert">This link has expired or was already used</p>
  <p>Ask the person who invited you for a new invitation. <a href="/console/sign-in">Sign in</a></p>
</div>`,
  );
}

/** A new person: a password, then Join (the link proved the address). */
export function joinPage(opts: { invitation: OpenInvitation; token: string; formToken: string; error?: string }): Html {
  const { invitation } = opts;
  return bare(
    `Join ${invitation.accountName}`,
    html`<div class="card narrow">
  <p class="brand">credit-gateway</p>
  <h1>Join “${invitation.accountName}”</h1>
  <p>You were invited as ${invitation.role}. Choose a password for <strong>${invitation.email}</strong>; you sign in with this email from now on.</p>
  ${opts.error ? html`<p class="error" role="alert">${opts.error}</p>` : ''}
  <form method="post" action="/console/invitations/accept" class="stack">
    <input type="hidden" name="_csrf" value="${opts.formToken}">
    <input type="hidden" name="token" value="${opts.token}">
    <input type="email" name="email" value="${invitation.email}" autocomplete="username" hidden readonly>
    <label for="password">Password</label>
    <input id="password" name="password" type="password" autocomplete="new-password" required minlength="12" maxlength="128" aria-describedby="password-hint">
    <p id="password-hint" class="hint">At least 12 characters; a common password is refused.</p>
    <button type="submit">Join</button>
  </form>
</div>`,
  );
}

/** Signed in as someone else than the invited address. */
export function wrongUserPage(opts: { invitation: OpenInvitation; email: string; csrfToken: string; next: string }): Html {
  return bare(
    'Invitation',
    html`<div class="card narrow">
  <p class="brand">credit-gateway</p>
  <h1>Invitation for ${opts.invitation.email}</h1>
  <p>You are signed in as ${opts.email}. Sign out, then open the link again to join “${opts.invitation.accountName}” as ${opts.invitation.email}.</p>
  <form method="post" action="/console/sign-out"><input type="hidden" name="_csrf" value="${opts.csrfToken}"><button type="submit">Sign out</button></form>
</div>`,
  );
}
