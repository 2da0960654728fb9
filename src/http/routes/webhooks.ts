import type { WebhookEndpoints } from '../../domain/webhooks/endpoints.js';
import type { BaseUrlOf, RouteModule } from './types.js';

/**
 * Webhook endpoints (API key): register (`201`, the secret shown once), list (no secrets), delete
 * (`204`; `404 webhook_not_found` for an unknown or another account's id).
 */
const webhookRoutes: RouteModule<{ webhooks: Pick<WebhookEndpoints, 'create' | 'list' | 'delete'>; baseUrlOf: BaseUrlOf }> = async (app, { webhooks, baseUrlOf }) => {
  app.post('/api/webhooks', { config: { auth: 'apiKey' } }, async (request, reply) => {
    const created = await webhooks.create(request.principal!.accountId, request.body, baseUrlOf(request));
    return reply.code(201).header('cache-control', 'no-store').header('location', `/api/webhooks/${created.id}`).send(created);
  });

  app.get('/api/webhooks', { config: { auth: 'apiKey' } }, async (request, reply) => {
    return reply.header('cache-control', 'no-store').send({ webhooks: await webhooks.list(request.principal!.accountId) });
  });

  app.delete<{ Params: { id: string } }>('/api/webhooks/:id', { config: { auth: 'apiKey' } }, async (request, reply) => {
    await webhooks.delete(request.principal!.accountId, request.params.id);
    return reply.code(204).send();
  });
};

export default webhookRoutes;
