import { lookupRequestSchema } from '../../domain/definitions/validation.js';
import type { Idempotency } from '../../domain/idempotency/service.js';
import { priceText } from '../../domain/operations/catalog.js';
import type { DefinitionService } from '../../domain/ports.js';
import { definitionResult } from '../schemas/bodies.js';
import { API_KEY, EDGE, errorResponses, IDEMPOTENT, JSON_BODY } from '../schemas/errors.js';
import { idempotencyHeaders, idempotent, type RouteModule } from './types.js';

/** Definition service (SERVICES=definitions): POST /api/playground/query. */
const definitionRoutes: RouteModule<{ definitions: DefinitionService; idempotency: Idempotency; maxKeywordLength: number }> = async (
  app,
  { definitions, idempotency, maxKeywordLength },
) => {
  const schema = {
    summary: `Look up a definition (${priceText('lookup')})`,
    body: lookupRequestSchema(maxKeywordLength),
    headers: idempotencyHeaders,
    response: {
      200: definitionResult,
      ...errorResponses([...EDGE, ...API_KEY, ...JSON_BODY, ...IDEMPOTENT, 'invalid_request', 'insufficient_credits', 'provider_failed', 'provider_unavailable']),
    },
  };
  // No body at all reads as a missing keyword (validators would see it as null, like a JSON `null`
  // body, which is not an object and says so).
  const noBodyIsEmpty = async (request: { body: unknown }) => {
    if (request.body === undefined) request.body = {};
  };
  // Not an async handler: it returns the lookup's own promise, with no frame of its own around it.
  app.post('/api/playground/query', { config: { auth: 'apiKey', operation: 'lookup' }, schema, preValidation: noBodyIsEmpty }, (request, reply) => {
    // The keyword as sent (the service trims it): an Idempotency-Key's fingerprint is of the request.
    const { keyword } = request.body;
    return idempotent(idempotency, request, reply, 'lookup', keyword, (attempt) => definitions.lookup(request.principal!, keyword, attempt));
  });
};

export default definitionRoutes;
