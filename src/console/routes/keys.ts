import type { FastifyRequest } from 'fastify';
import { AppError, isAppError } from '../../domain/errors.js';
import { actorOf, callerOf, pageContext, wantsJson } from '../context.js';
import { sendHtml } from '../render.js';
import { confirmDeletePage, keysPage } from '../views/keys.js';
import { needs, SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

/** API keys: list, create (the key shown once), confirm and delete; changes audited from `host`. */
const keyRoutes: ConsoleRoute<Pick<ConsoleServices, 'keys'> & { host: string }> = async (app, { keys, host }) => {
  const activeKeys = async (request: FastifyRequest) => (await keys.list(callerOf(request).principal.accountId)).filter((k) => !k.deletedAt);

  app.get('/keys', SESSION, async (request, reply) => sendHtml(reply, keysPage(pageContext(request), await activeKeys(request))));

  app.post<{ Body: { name?: unknown } }>('/keys', needs('keys.manage'), async (request, reply) => {
    const caller = callerOf(request);
    try {
      const created = await keys.create(caller.principal.accountId, request.body?.name, actorOf(request, host));
      if (wantsJson(request)) return reply.code(201).send({ id: created.id, key: created.key, prefix: created.prefix, name: created.name, createdAt: created.createdAt });
      return sendHtml(reply.code(201), keysPage(pageContext(request), await activeKeys(request), { created }));
    } catch (err) {
      if (!isAppError(err) || err.code !== 'invalid_request' || wantsJson(request)) throw err;
      const name = typeof request.body?.name === 'string' ? request.body.name : '';
      return sendHtml(reply.code(400), keysPage(pageContext(request), await activeKeys(request), { error: err.message, name }));
    }
  });

  app.get<{ Params: { id: string } }>('/keys/:id/delete', needs('keys.manage'), async (request, reply) => {
    const key = (await activeKeys(request)).find((k) => k.id === request.params.id);
    if (!key) throw new AppError('route_not_found');
    return sendHtml(reply, confirmDeletePage(pageContext(request, '/console/keys'), key));
  });

  app.post<{ Params: { id: string } }>('/keys/:id/delete', needs('keys.manage'), async (request, reply) => {
    const deleted = await keys.delete(request.params.id, actorOf(request, host), callerOf(request).principal.accountId);
    if (wantsJson(request)) return reply.send(deleted);
    return reply.code(303).header('location', '/console/keys').send();
  });
};

export default keyRoutes;
