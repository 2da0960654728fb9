import { getStaticFile } from 'ruru/static';
import type { ClientTokens } from '../../domain/client-tokens/service.js';
import { AppError } from '../../domain/errors.js';
import { callerOf, pageContext } from '../context.js';
import { sendHtml } from '../render.js';
import { explorerPage } from '../views/explorer.js';
import { SESSION, type ConsoleRoute } from './types.js';

const STATIC_PATH = '/console/explorer/static/';
const INITIAL_QUERY = `query Balance {
  me {
    credits
  }
}
`;

/**
 * The GraphQL explorer: GraphiQL served by the gateway (ruru's prebuilt bundle and Monaco workers, from
 * node_modules), calling /graphql as the signed-in account through a client token minted for the
 * console's origin on every page load. Its CSP differs from the console's in two places, this page
 * only: ruru's four inline scripts are allowed by hash, and styles may be inline (Monaco and GraphiQL
 * set them at run time).
 */
const explorerRoutes: ConsoleRoute<{ tokens: Pick<ClientTokens, 'mintForConsole'>; imageOrigin: string }> = async (app, s) => {
  app.get('/explorer', SESSION, async (request, reply) => {
    const caller = callerOf(request);
    // As the browser will send it in Origin: its scheme (PUBLIC_BASE_URL's when that is https, whatever
    // the last hop says), and a default port (Host: example.com:443) left out.
    const secure = request.servedOverHttps;
    const origin = originOf(`${secure ? 'https' : 'http'}://${request.headers.host ?? 'localhost'}`);
    const minted = await s.tokens.mintForConsole({ accountId: caller.principal.accountId, userId: caller.principal.userId, role: caller.role, sessionId: caller.sessionId }, origin);
    const page = explorerPage(pageContext(request, '/console/explorer'), {
      staticPath: STATIC_PATH,
      subscriptionEndpoint: `${secure ? 'wss' : 'ws'}://${request.headers.host ?? 'localhost'}/graphql`,
      token: minted.token,
      initialQuery: INITIAL_QUERY,
    });
    reply.header(
      'content-security-policy',
      `default-src 'none'; script-src 'self' ${page.scriptHashes.join(' ')}; style-src 'self' 'unsafe-inline'; img-src 'self' data:${s.imageOrigin}; font-src 'self' data:; worker-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
    );
    return sendHtml(reply, page.body);
  });

  // Ruru's files (its bundle, stylesheet and Monaco workers), brotli-compressed when the browser takes it.
  app.get<{ Params: { '*': string } }>('/explorer/static/*', SESSION, async (request, reply) => {
    const file = await getStaticFile({ staticPath: STATIC_PATH, urlPath: `${STATIC_PATH}${request.params['*']}`, acceptEncoding: request.headers['accept-encoding'], disallowDevAssets: true });
    if (!file) throw new AppError('route_not_found');
    return reply.headers(file.headers).header('cache-control', 'private, max-age=3600').header('vary', 'Accept-Encoding').send(file.content);
  });
};

function originOf(base: string): string {
  try {
    return new URL(base).origin;
  } catch {
    throw new AppError('malformed_request', { message: 'Invalid Host header' });
  }
}

export default explorerRoutes;
