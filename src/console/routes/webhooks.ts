import type { FastifyRequest } from 'fastify';
import { AppError, isAppError } from '../../domain/errors.js';
import { DEFAULT_LOW_CREDITS_THRESHOLD } from '../../domain/webhooks/types.js';
import type { BaseUrlOf } from '../../http/routes/types.js';
import { callerOf, pageContext, wantsJson } from '../context.js';
import { sendHtml } from '../render.js';
import { confirmDeleteEndpointPage, webhooksPage, type WebhooksPageData } from '../views/webhooks.js';
import { needs, SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

type Form = { url?: unknown; events?: unknown; threshold?: unknown };

/** Webhooks: add an endpoint (its secret shown once), delete one, recent deliveries and Resend, the `credits.low` threshold. */
const webhookRoutes: ConsoleRoute<Pick<ConsoleServices, 'webhooks'> & { baseUrlOf: BaseUrlOf }> = async (app, { webhooks, baseUrlOf }) => {
  const accountOf = (request: FastifyRequest) => callerOf(request).principal.accountId;
  const data = async (request: FastifyRequest, extra: Partial<WebhooksPageData> = {}): Promise<WebhooksPageData> => {
    const accountId = accountOf(request);
    const [endpoints, deliveries, lowCredits] = await Promise.all([webhooks.list(accountId), webhooks.recentDeliveries(accountId, 50), webhooks.lowCreditsState(accountId)]);
    return { endpoints, deliveries, lowCredits: lowCredits ?? { threshold: DEFAULT_LOW_CREDITS_THRESHOLD, armed: true }, ...extra };
  };

  app.get('/webhooks', SESSION, async (request, reply) => sendHtml(reply, webhooksPage(pageContext(request), await data(request))));

  app.post<{ Body: Form }>('/webhooks', needs('webhooks.manage'), async (request, reply) => {
    // A form sends one `events` per ticked box (a string for one, an array for several, none for none).
    const raw = request.body?.events;
    const events = raw === undefined ? [] : [raw].flat();
    const input = { url: request.body?.url, events: wantsJson(request) ? raw : events };
    try {
      const created = await webhooks.create(accountOf(request), input, baseUrlOf(request));
      if (wantsJson(request)) return reply.code(201).header('cache-control', 'no-store').send(created);
      return sendHtml(reply.code(201).header('cache-control', 'no-store'), webhooksPage(pageContext(request), await data(request, { created })));
    } catch (err) {
      if (!isAppError(err) || err.code !== 'invalid_request' || wantsJson(request)) throw err;
      const form = { url: typeof request.body?.url === 'string' ? request.body.url : '', events: events.map(String) };
      return sendHtml(reply.code(400), webhooksPage(pageContext(request), await data(request, { error: err.message, form })));
    }
  });

  app.get<{ Params: { id: string } }>('/webhooks/:id/delete', needs('webhooks.manage'), async (request, reply) => {
    const endpoint = (await webhooks.list(accountOf(request))).find((e) => e.id === request.params.id);
    if (!endpoint) throw new AppError('webhook_not_found');
    return sendHtml(reply, confirmDeleteEndpointPage(pageContext(request, '/console/webhooks'), endpoint));
  });

  app.post<{ Params: { id: string } }>('/webhooks/:id/delete', needs('webhooks.manage'), async (request, reply) => {
    await webhooks.delete(accountOf(request), request.params.id);
    if (wantsJson(request)) return reply.code(204).send();
    return reply.code(303).header('location', '/console/webhooks').send();
  });

  app.post<{ Params: { id: string } }>('/webhooks/deliveries/:id/resend', needs('webhooks.manage'), async (request, reply) => {
    const delivery = await webhooks.resend(accountOf(request), request.params.id);
    if (wantsJson(request)) return reply.code(202).send(delivery);
    return reply.code(303).header('location', '/console/webhooks').send();
  });

  app.post<{ Body: Form }>('/webhooks/threshold', needs('webhooks.manage'), async (request, reply) => {
    try {
      const state = await webhooks.setLowCreditsThreshold(accountOf(request), request.body?.threshold);
      if (wantsJson(request)) return reply.send(state);
      return reply.code(303).header('location', '/console/webhooks').send();
    } catch (err) {
      if (!isAppError(err) || err.code !== 'invalid_request' || wantsJson(request)) throw err;
      return sendHtml(reply.code(400), webhooksPage(pageContext(request), await data(request, { error: err.message })));
    }
  });
};

export default webhookRoutes;
