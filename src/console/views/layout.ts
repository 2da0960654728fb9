import { can, type Action, type Role } from '../../domain/team/permissions.js';
import { html, type Html } from '../html.js';

/** Navigation links; one whose page a role may not open is not shown to it. */
export const NAV: readonly { href: string; label: string; needs: Action }[] = [
  { href: '/console', label: 'Overview', needs: 'view' },
  { href: '/console/keys', label: 'API keys', needs: 'view' },
  { href: '/console/usage', label: 'Usage', needs: 'view' },
  { href: '/console/audit', label: 'Audit log', needs: 'view' },
  { href: '/console/jobs', label: 'Jobs', needs: 'view' },
  { href: '/console/playground', label: 'Playground', needs: 'playground.use' },
  { href: '/console/sessions', label: 'Sessions', needs: 'view' },
  { href: '/console/explorer', label: 'Explorer', needs: 'view' },
  { href: '/console/webhooks', label: 'Webhooks', needs: 'view' },
  { href: '/console/team', label: 'Team', needs: 'view' },
  { href: '/console/settings', label: 'Settings', needs: 'self' },
];

export interface PageContext {
  /** The current path, to mark the navigation link. */
  path: string;
  email: string;
  csrfToken: string;
  /** The signed-in member's role in the current account: pages show only the controls it may use. */
  role: Role;
  /** The current account's id. */
  accountId: string;
  /** Every account of the user (the switcher appears when there are several). */
  accounts: readonly { id: string; name: string }[];
}

/** Whether the page should offer a control that needs `action`. */
export function allowed(ctx: Pick<PageContext, 'role'>, action: Action): boolean {
  return can(ctx.role, action);
}

/** Hidden synchronizer token for forms (used only by clients that send neither Sec-Fetch-Site nor Origin). */
export function csrfField(token: string): Html {
  return html`<input type="hidden" name="_csrf" value="${token}">`;
}

function shell(title: string, body: Html, extraHead?: Html): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · credit-gateway console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/console.js" defer></script>
${extraHead}
</head>
${body}
</html>`;
}

/**
 * The account switcher, for a user in several accounts: `Switch account`, then a link per account.
 * Switching changes state, so each link leads (without JavaScript) to a page with a form that posts;
 * console.js posts it directly.
 */
function accountSwitcher(ctx: PageContext): Html {
  if (ctx.accounts.length < 2) return html``;
  const current = ctx.accounts.find((a) => a.id === ctx.accountId);
  return html`<div class="switcher">
    <span class="current-account">${current?.name ?? ''}</span>
    <button type="button" class="secondary" aria-expanded="false" aria-controls="account-menu" data-menu-toggle hidden>Switch account</button>
    <ul id="account-menu" class="account-menu" aria-label="Accounts" data-menu>
      ${ctx.accounts
        .filter((a) => a.id !== ctx.accountId)
        .map((a) => html`<li><a href="/console/accounts/${a.id}/switch" data-switch-account="${a.id}">${a.name}</a></li>`)}
    </ul>
  </div>`;
}

/** The signed-in header: brand, navigation, the account switcher, who is signed in and the Sign out button. */
export function topBar(ctx: PageContext): Html {
  return html`<header class="top">
  <a class="brand" href="/console">credit-gateway</a>
  <nav aria-label="Console">
    <ul>
      ${NAV.filter((item) => can(ctx.role, item.needs)).map(
        (item) => html`<li><a href="${item.href}"${item.href === ctx.path ? html` aria-current="page"` : ''}>${item.label}</a></li>`,
      )}
    </ul>
  </nav>
  ${accountSwitcher(ctx)}
  <form class="signout" method="post" action="/console/sign-out">
    ${csrfField(ctx.csrfToken)}
    <span class="who">${ctx.email}</span>
    <button type="submit" class="secondary">Sign out</button>
  </form>
</header>`;
}

export function page(ctx: PageContext, title: string, content: Html): Html {
  return shell(
    title,
    html`<body>
<a class="skip" href="#main">Skip to content</a>
${topBar(ctx)}
<main id="main" data-csrf="${ctx.csrfToken}">
<h1>${title}</h1>
${content}
</main>
</body>`,
  );
}

/** A page for a signed-out visitor (sign-in, errors before sign-in). */
export function bare(title: string, content: Html): Html {
  return shell(title, html`<body class="bare"><main id="main">${content}</main></body>`);
}
