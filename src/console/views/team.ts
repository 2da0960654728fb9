import type { PendingInvitation } from '../../domain/team/invitations.js';
import { assignableRoles, can, type Role } from '../../domain/team/permissions.js';
import type { MemberRecord } from '../../domain/team/ports.js';
import { html, when, type Html } from '../html.js';
import { allowed, csrfField, page, type PageContext } from './layout.js';


export interface TeamPageData {
  userId: string;
  accountName: string;
  members: MemberRecord[];
  invitations: PendingInvitation[];
  require2fa: boolean;
  notice?: string;
  error?: string;
  /** What the invite form held when it was refused. */
  invite?: { email: string; role: string };
}

const ROLE_LABELS: Record<Role, string> = { owner: 'Owner', admin: 'Admin', developer: 'Developer', viewer: 'Viewer' };

function roleSelect(id: string, roles: readonly Role[], selected: string): Html {
  return html`<select id="${id}" name="role">${roles.map((r) => html`<option value="${r}"${r === selected ? html` selected` : ''}>${ROLE_LABELS[r]}</option>`)}</select>`;
}

/** Whether the signed-in member may change or remove this member (owners only by owners). */
function mayManage(ctx: PageContext, m: MemberRecord): boolean {
  return allowed(ctx, 'members.manage') && (m.role !== 'owner' || allowed(ctx, 'owners.manage'));
}

function memberRow(ctx: PageContext, data: TeamPageData, m: MemberRecord): Html {
  const manage = mayManage(ctx, m);
  const me = m.userId === data.userId;
  return html`<tr>
    <th scope="row">${m.email}${me ? html` <span class="muted">(you)</span>` : ''}</th>
    <td data-label="Role">${
      manage
        ? html`<form method="post" action="/console/team/members/${m.userId}/role" class="inline-form">
      ${csrfField(ctx.csrfToken)}
      <label class="visually-hidden" for="role-${m.userId}">Role</label>
      ${roleSelect(`role-${m.userId}`, assignableRoles(ctx.role), m.role)}
      <button type="submit" class="secondary">Save</button>
    </form>`
        : ROLE_LABELS[m.role]
    }</td>
    <td data-label="Joined">${when(m.joinedAt)}</td>
    <td>${
      manage && !me
        ? html`<form method="get" action="/console/team/members/${m.userId}/remove"><button type="submit" class="danger secondary" data-remove-member="${m.userId}" data-member-email="${m.email}" aria-label="Remove ${m.email}">Remove</button></form>`
        : ''
    }</td>
  </tr>`;
}

function inviteDialog(ctx: PageContext, data: TeamPageData): Html {
  const roles = assignableRoles(ctx.role);
  return html`<p><button type="button" data-open="invite-dialog">Invite member</button></p>
<dialog id="invite-dialog" aria-labelledby="invite-title"${data.invite ? html` open` : ''}>
  <h2 id="invite-title">Invite member</h2>
  <form method="post" action="/console/team/invitations" class="stack">
    ${csrfField(ctx.csrfToken)}
    <label for="invite-email">Email</label>
    <input id="invite-email" name="email" type="email" required maxlength="254" autocomplete="off" value="${data.invite?.email ?? ''}">
    <label for="invite-role">Role</label>
    ${roleSelect('invite-role', roles, data.invite?.role ?? 'developer')}
    <p class="hint">The invitation link is valid for 7 days and works once.</p>
    <div class="actions"><button type="submit">Send invitation</button> <button type="button" class="secondary" data-close>Cancel</button></div>
  </form>
</dialog>`;
}

function invitationTable(ctx: PageContext, invitations: PendingInvitation[]): Html {
  if (invitations.length === 0) return html`<p class="empty">No pending invitations.</p>`;
  const revoke = allowed(ctx, 'members.manage');
  return html`<div class="table-wrap"><table class="cards-sm">
  <caption>${invitations.length} pending ${invitations.length === 1 ? 'invitation' : 'invitations'}</caption>
  <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Expires</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>
  ${invitations.map(
    (i) => html`<tr>
    <th scope="row">${i.email}</th>
    <td data-label="Role">${ROLE_LABELS[i.role]}</td>
    <td data-label="Expires">${when(i.expiresAt)}</td>
    <td>${
      revoke && (i.role !== 'owner' || allowed(ctx, 'owners.manage'))
        ? html`<form method="post" action="/console/team/invitations/${i.id}/revoke">${csrfField(ctx.csrfToken)}<button type="submit" class="danger secondary" aria-label="Revoke the invitation of ${i.email}">Revoke</button></form>`
        : ''
    }</td>
  </tr>`,
  )}
  </tbody>
</table></div>`;
}

function securityCard(ctx: PageContext, data: TeamPageData): Html {
  const withOut = data.members.filter((m) => !m.has2fa).length;
  return html`<section class="card" aria-labelledby="security-title">
  <h2 id="security-title">Security</h2>
  <form method="post" action="/console/team/require-2fa" class="stack">
    ${csrfField(ctx.csrfToken)}
    <label><input type="checkbox" name="require2fa" value="on"${data.require2fa ? html` checked` : ''}> Require two-factor authentication</label>
    <p class="hint">Members without it are sent to Settings to set it up before they can open any other page.${withOut ? ` ${withOut} ${withOut === 1 ? 'member has' : 'members have'} not set it up yet.` : ''}</p>
    <button type="submit">Save</button>
  </form>
</section>`;
}

export function teamPage(ctx: PageContext, data: TeamPageData): Html {
  return page(
    ctx,
    'Team',
    html`<p class="lead">Everyone here signs in with their own email and password and acts on the account “${data.accountName}” with the rights of their role.</p>
${data.notice ? html`<p class="notice" role="status">${data.notice}</p>` : ''}
${data.error ? html`<p class="error" role="alert">${data.error}</p>` : ''}
${allowed(ctx, 'members.manage') ? inviteDialog(ctx, data) : ''}
<dialog id="remove-member-dialog" aria-labelledby="remove-title">
  <h2 id="remove-title">Remove member</h2>
  <p>Remove <span data-member-email></span> from this account? They are signed out of it at once; the keys they created stay.</p>
  <form method="post" data-remove-form class="actions">
    ${csrfField(ctx.csrfToken)}
    <button type="submit" class="danger">Remove member</button> <button type="button" class="secondary" data-close>Cancel</button>
  </form>
</dialog>
<h2>Members</h2>
<div class="table-wrap"><table class="cards-sm">
  <caption>${data.members.length} ${data.members.length === 1 ? 'member' : 'members'}</caption>
  <thead><tr><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Joined</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>
  ${data.members.map((m) => memberRow(ctx, data, m))}
  </tbody>
</table></div>
<h2>Pending invitations</h2>
${invitationTable(ctx, data.invitations)}
${can(ctx.role, 'account.require2fa') ? securityCard(ctx, data) : ''}
<section class="card" aria-labelledby="leave-title">
  <h2 id="leave-title">Leave this account</h2>
  <p>You lose access to “${data.accountName}” at once. An account keeps at least one owner.</p>
  <form method="post" action="/console/team/leave">${csrfField(ctx.csrfToken)}<button type="submit" class="danger secondary">Leave account</button></form>
</section>`,
  );
}

/** Without JavaScript, Remove leads here: the same confirmation as the dialog, as a page. */
export function confirmRemovePage(ctx: PageContext, member: MemberRecord): Html {
  return page(
    ctx,
    'Remove member',
    html`<section role="dialog" aria-labelledby="confirm-title" class="card">
  <h2 id="confirm-title">Remove ${member.email}?</h2>
  <p>They are signed out of this account at once; the keys they created stay.</p>
  <form method="post" action="/console/team/members/${member.userId}/remove" class="actions">
    ${csrfField(ctx.csrfToken)}
    <button type="submit" class="danger">Remove member</button> <a href="/console/team">Cancel</a>
  </form>
</section>`,
  );
}

/** Without JavaScript, an account link of the switcher leads here: switching is a POST. */
export function confirmSwitchPage(ctx: PageContext, account: { id: string; name: string }): Html {
  return page(
    ctx,
    'Switch account',
    html`<section class="card">
  <h2>Switch to “${account.name}”?</h2>
  <form method="post" action="/console/accounts/${account.id}/switch" class="actions">
    ${csrfField(ctx.csrfToken)}
    <button type="submit">Switch to ${account.name}</button> <a href="/console">Cancel</a>
  </form>
</section>`,
  );
}
