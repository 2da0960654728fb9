import { invalid } from '../../domain/errors.js';
import type { Idempotency } from '../../domain/idempotency/service.js';
import type { DefinitionService } from '../../domain/ports.js';
import { idempotent, type RouteModule } from './types.js';

/** Definition service (SERVICES=definitions): POST /api/playground/query. */
const definitionRoutes: RouteModule<{ definitions: DefinitionService; idempotency: Idempotency }> = async (app, { definitions, idempotency }) => {
  app.post('/api/playground/query', { config: { auth: 'apiKey' } }, async (request, reply) => {
    const body = request.body;
    // No body at all reads as a missing keyword; a body that is JSON but not an object cannot hold one.
    if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) {
      throw invalid('body', 'body must be a JSON object with a keyword field');
    }
    const keyword = (body as { keyword?: unknown } | undefined)?.keyword;
    return idempotent(idempotency, request, reply, 'lookup', keyword, () => definitions.lookup(request.principal!, keyword));
  });
};

export default definitionRoutes;
