import type { HealthCheck } from '../../data/connection.js';
import type { RouteModule } from './types.js';

/** Liveness (the process answers) and readiness (the database answers). No auth. */
const healthRoutes: RouteModule<{ health: HealthCheck }> = async (app, { health }) => {
  // Probes call by address, whatever ALLOWED_HOSTS says.
  app.get('/healthz', { config: { anyHost: true } }, async () => ({ status: 'ok' }));

  app.get('/readyz', { config: { anyHost: true } }, async (_request, reply) => {
    if (await health.ready()) return { status: 'ready' };
    return reply.code(503).header('retry-after', '5').send({ status: 'unavailable' });
  });
};

export default healthRoutes;
