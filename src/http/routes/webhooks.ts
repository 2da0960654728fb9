import { z } from 'zod';
import type { WebhookEndpoints } from '../../domain/webhooks/endpoints.js';
import { WEBHOOK_EVENT_TYPES } from '../../domain/webhooks/types.js';
import { webhookCreated, webhookList } from '../schemas/bodies.js';
import { API_KEY, EDGE, errorResponses, JSON_BODY } from '../schemas/errors.js';
import type { BaseUrlOf, RouteModule } from './types.js';

/**
 * The request body as documented. Its rules are still checked by WebhookEndpoints.create (texts that
 * name the offending event, the address checks), so this schema accepts any body and only describes
 * it; moving those rules into a domain zod schema, as for prompts and keywords, is the next step.
 */
const webhookRequest = z.unknown().meta({
  type: 'object',
  required: ['url'],
  properties: {
    url: { type: 'string', format: 'uri', description: 'An https (or http) URL; loopback, private and link-local addresses are refused unless WEBHOOK_ALLOW_PRIVATE_URLS=true.' },
    events: { type: 'array', minItems: 1, items: { type: 'string', enum: [...WEBHOOK_EVENT_TYPES] }, description: 'Default: all. `key.expiring` carries `{id, name, prefix, expiresAt}` of an API key whose expiry is 7 days away or nearer.' },
  },
});

/**
 * Webhook endpoints (API key): register (`201`, the secret shown once), list (no secrets), delete
 * (`204`; `404 webhook_not_found` for an unknown or another account's id).
 */
const webhookRoutes: RouteModule<{ webhooks: Pick<WebhookEndpoints, 'create' | 'list' | 'delete'>; baseUrlOf: BaseUrlOf }> = async (app, { webhooks, baseUrlOf }) => {
  const create = {
    summary: 'Register a webhook endpoint (Standard Webhooks)',
    body: webhookRequest,
    response: { 201: webhookCreated, ...errorResponses([...EDGE, ...API_KEY, ...JSON_BODY, 'invalid_request']) },
  };
  app.post('/api/webhooks', { config: { auth: 'apiKey', operation: 'createWebhook' }, schema: create }, async (request, reply) => {
    const created = await webhooks.create(request.principal!.accountId, request.body, baseUrlOf(request));
    return reply.code(201).header('cache-control', 'no-store').header('location', `/api/webhooks/${created.id}`).send(created);
  });

  const list = { summary: "List the account's webhook endpoints (no secrets)", response: { 200: webhookList, ...errorResponses([...EDGE, ...API_KEY]) } };
  app.get('/api/webhooks', { config: { auth: 'apiKey', operation: 'listWebhooks' }, schema: list }, async (request, reply) => {
    return reply.header('cache-control', 'no-store').send({ webhooks: await webhooks.list(request.principal!.accountId) });
  });

  const remove = {
    summary: 'Delete a webhook endpoint',
    params: z.object({ id: z.string() }),
    response: { 204: z.undefined().meta({ description: 'Deleted.' }), ...errorResponses([...EDGE, ...API_KEY, 'webhook_not_found']) },
  };
  app.delete('/api/webhooks/:id', { config: { auth: 'apiKey', operation: 'deleteWebhook' }, schema: remove }, async (request, reply) => {
    await webhooks.delete(request.principal!.accountId, request.params.id);
    return reply.code(204).send(undefined);
  });
};

export default webhookRoutes;
