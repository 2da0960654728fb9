import type { RouteModule } from './types.js';

/** Definition service (SERVICES=definitions): POST /api/playground/query. */
const definitionRoutes: RouteModule = async (app, { services }) => {
  app.post('/api/playground/query', { config: { auth: true } }, async (request) => {
    const body = request.body as { keyword?: unknown } | undefined;
    const keyword = body !== null && typeof body === 'object' && !Array.isArray(body) ? body.keyword : undefined;
    return services.definitions.lookup(request.principal!, keyword);
  });
};

export default definitionRoutes;
