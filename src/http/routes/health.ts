import type { HealthCheck } from '../../data/connection.js';
import type { RouteModule } from './types.js';

/** Liveness (the process answers) and readiness (the database answers). No auth. */
const healthRoutes: RouteModule<{ health: HealthCheck }> = async (app, { health }) => {
  // Probes call by address, whatever ALLOWED_HOSTS says, and answer for themselves while the
  // database is down.
  const probe = { config: { anyHost: true, withoutDatabase: true } };
  app.get('/healthz', probe, async () => ({ status: 'ok' }));

  app.get('/readyz', probe, async (_request, reply) => {
    if (await health.ready()) return { status: 'ready' };
    return reply.code(503).header('retry-after', '5').send({ status: 'unavailable' });
  });
};

export default healthRoutes;
