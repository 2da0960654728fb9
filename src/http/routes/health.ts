import type { RouteModule } from './types.js';

/** Liveness (the process answers) and readiness (the database answers a ping). No auth. */
const healthRoutes: RouteModule = async (app, { services }) => {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    try {
      await services.connection.db!.command({ ping: 1 }, { timeoutMS: 2000 });
      return { status: 'ready' };
    } catch {
      return reply.code(503).header('retry-after', '5').send({ status: 'unavailable' });
    }
  });
};

export default healthRoutes;
