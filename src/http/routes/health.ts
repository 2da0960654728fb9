import { z } from 'zod';
import type { HealthCheck } from '../../data/connection.js';
import { errorResponses, PROBE_EDGE } from '../schemas/errors.js';
import type { RouteModule } from './types.js';

/** Liveness (the process answers) and readiness (the database answers). No auth. */
const healthRoutes: RouteModule<{ health: HealthCheck }> = async (app, { health }) => {
  // Probes call by address, whatever ALLOWED_HOSTS says, and answer for themselves while the
  // database is down.
  const config = { anyHost: true, withoutDatabase: true };
  app.get(
    '/healthz',
    { config, schema: { summary: 'Liveness: the process answers', response: { 200: z.object({ status: z.literal('ok') }), ...errorResponses(PROBE_EDGE) } } },
    async () => ({ status: 'ok' as const }),
  );

  const unavailable = z.object({ status: z.literal('unavailable') }).meta({ description: 'The database does not answer (with Retry-After).' });
  const errors = errorResponses(PROBE_EDGE, { 503: unavailable });
  app.get(
    '/readyz',
    { config, schema: { summary: 'Readiness: the database answers', response: { 200: z.object({ status: z.literal('ready') }), ...errors, 503: errors[503]! } } },
    async (_request, reply) => {
      if (await health.ready()) return { status: 'ready' as const };
      return reply.code(503).header('retry-after', '5').send({ status: 'unavailable' as const });
    },
  );
};

export default healthRoutes;
