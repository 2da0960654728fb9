import { html, type Html } from '../html.js';

export const NAV = [
  { href: '/console', label: 'Overview' },
  { href: '/console/keys', label: 'API keys' },
  { href: '/console/usage', label: 'Usage' },
  { href: '/console/audit', label: 'Audit log' },
  { href: '/console/jobs', label: 'Jobs' },
  { href: '/console/playground', label: 'Playground' },
  { href: '/console/sessions', label: 'Sessions' },
  { href: '/console/explorer', label: 'Explorer' },
  { href: '/console/webhooks', label: 'Webhooks' },
  { href: '/console/settings', label: 'Settings' },
] as const;

export interface PageContext {
  /** The current path, to mark the navigation link. */
  path: string;
  email: string;
  csrfToken: string;
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

/** The signed-in header: brand, navigation, who is signed in and the Sign out button. */
export function topBar(ctx: PageContext): Html {
  return html`<header class="top">
  <a class="brand" href="/console">credit-gateway</a>
  <nav aria-label="Console">
    <ul>
      ${NAV.map((item) => html`<li><a href="${item.href}"${item.href === ctx.path ? html` aria-current="page"` : ''}>${item.label}</a></li>`)}
    </ul>
  </nav>
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
