import { hostname } from 'node:os';
import { mintRequestSchema } from '../../domain/client-tokens/request.js';
import type { ClientTokens } from '../../domain/client-tokens/service.js';
import { mintedToken } from '../schemas/bodies.js';
import { API_KEY, EDGE, errorResponses, JSON_BODY } from '../schemas/errors.js';
import type { RouteModule } from './types.js';

/**
 * Client tokens for browser apps: `POST /api/client-tokens`, called with an API key by the app's own
 * backend. Minting costs nothing and is audited with the key, the origins and the caller's address.
 */
const clientTokenRoutes: RouteModule<{ tokens: Pick<ClientTokens, 'mint'>; host?: string }> = async (app, { tokens, host = hostname() }) => {
  const schema = {
    summary: 'Mint a client token for a browser app (free)',
    body: mintRequestSchema,
    response: { 201: mintedToken, ...errorResponses([...EDGE, ...API_KEY, ...JSON_BODY, 'invalid_request']) },
  };
  app.post('/api/client-tokens', { config: { auth: 'apiKey', operation: 'createClientToken' }, schema }, async (request, reply) => {
    const principal = request.principal!;
    const minted = await tokens.mint(principal, request.body, { actor: `key:${principal.keyId}`, ip: request.ip, host });
    return reply.code(201).header('cache-control', 'no-store').send(minted);
  });
};

export default clientTokenRoutes;
