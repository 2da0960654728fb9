import { invalid } from '../../domain/errors.js';
import type { DefinitionService } from '../../domain/ports.js';
import type { RouteModule } from './types.js';

/** Definition service (SERVICES=definitions): POST /api/playground/query. */
const definitionRoutes: RouteModule<{ definitions: DefinitionService }> = async (app, { definitions }) => {
  app.post('/api/playground/query', { config: { auth: 'apiKey' } }, async (request) => {
    const body = request.body;
    // No body at all reads as a missing keyword; a body that is JSON but not an object cannot hold one.
    if (body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) {
      throw invalid('body', 'body must be a JSON object with a keyword field');
    }
    return definitions.lookup(request.principal!, (body as { keyword?: unknown } | undefined)?.keyword);
  });
};

export default definitionRoutes;
