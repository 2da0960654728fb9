import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { errorResponses, PROBE_EDGE } from '../schemas/errors.js';
import type { RouteModule } from './types.js';

/** Where things are, in the order a newcomer looks for them; a path is listed only where a route serves it. */
const PLACES = [
  ['console', '/console'],
  ['graphql', '/graphql'],
  ['openapi', '/openapi.json'],
  ['docs', '/docs'],
] as const;

/**
 * `GET /`, the address the gateway prints: a browser goes on to the console, an API client gets a small
 * JSON index of where things are. No auth, nothing read from the database.
 */
const rootRoutes: RouteModule<Record<never, never>> = async (app) => {
  let index: Record<string, string> | undefined;
  const schema = {
    summary: 'Where things are (a browser, `Accept: text/html`, is sent to the console)',
    response: {
      200: z
        .record(z.string(), z.string())
        .meta({ description: 'Paths of what this deployment serves: `console`, `graphql`, `openapi`, `docs`.' }),
      303: z.undefined().meta({ description: 'To /console, for a browser.' }),
      ...errorResponses([...PROBE_EDGE, 'host_not_allowed']),
    },
  };
  app.get('/', { config: { withoutDatabase: true }, schema }, async (request, reply) => {
    if (/\btext\/html\b/.test(String(request.headers.accept ?? ''))) return reply.code(303).header('location', '/console').send(undefined);
    // Routes registered after this one count too: the router is complete once requests arrive.
    index ??= indexOf(app);
    return reply.header('cache-control', 'no-cache').send(index);
  });
};

function indexOf(app: FastifyInstance): Record<string, string> {
  const index: Record<string, string> = { name: 'credit-gateway' };
  for (const [name, url] of PLACES) if (app.hasRoute({ method: 'GET', url })) index[name] = url;
  return index;
}

export default rootRoutes;
