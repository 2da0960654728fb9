import { createHash } from 'node:crypto';
import { makeHTMLParts, type RuruClientConfig } from 'ruru/server';
import { html, Html } from '../html.js';
import { topBar, type PageContext } from './layout.js';

export interface ExplorerSetup {
  /** Where ruru's static files are served (ends with `/`). */
  staticPath: string;
  /** The WebSocket address of /graphql as the browser reaches it. */
  subscriptionEndpoint: string;
  /** The console's own client token for this page. */
  token: string;
  /** The query the explorer opens with. */
  initialQuery: string;
}

export interface ExplorerPage {
  body: Html;
  /** `'sha256-…'` sources of the page's inline scripts, for its Content-Security-Policy. */
  scriptHashes: string[];
}

/**
 * GraphiQL (ruru's prebuilt GraphiQL 5 with its Monaco workers) inside the console's header. Ruru's
 * own inline scripts (its configuration and its start-up) are kept as ruru writes them and allowed by
 * their hashes; its loading skeleton's style is replaced by console.css.
 */
export function explorerPage(ctx: PageContext, setup: ExplorerSetup): ExplorerPage {
  const parts = makeHTMLParts({
    staticPath: setup.staticPath,
    endpoint: '/graphql',
    subscriptionEndpoint: setup.subscriptionEndpoint,
    clientConfig: {
      initialQuery: setup.initialQuery,
      defaultQuery: setup.initialQuery,
      initialHeaders: JSON.stringify({ Authorization: `Bearer ${setup.token}` }, null, 2),
      // Headers hold the token: never written to localStorage.
      showPersistHeadersSettings: false,
      // ruru-types declares every prop as required; ruru fills in whatever is left out.
    } as RuruClientConfig,
  });
  const scripts = [parts.configScript, parts.headerScripts, parts.bodyScripts, parts.bodyInitScript];
  const body = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Explorer · credit-gateway console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/console.js" defer></script>
<script src="/console/assets/explorer.js" defer></script>
<link rel="modulepreload" href="${setup.staticPath}ruru.js">
<link rel="stylesheet" href="${setup.staticPath}ruru.css">
${new Html(parts.configScript)}
${new Html(parts.headerScripts)}
</head>
<body class="explorer">
<a class="skip" href="#main">Skip to content</a>
${topBar(ctx)}
<main id="main" data-csrf="${ctx.csrfToken}">
<h1 class="visually-hidden">Explorer</h1>
${new Html(parts.bodyContent)}
</main>
${new Html(parts.bodyScripts)}
${new Html(parts.bodyInitScript)}
</body>
</html>`;
  return { body, scriptHashes: scripts.map(inlineScriptHash) };
}

function inlineScriptHash(tag: string): string {
  const match = /^<script[^>]*>([\s\S]*)<\/script>$/.exec(tag.trim());
  if (!match) throw new Error('ruru: expected one inline <script> element');
  return `'sha256-${createHash('sha256').update(match[1]!).digest('base64')}'`;
}
