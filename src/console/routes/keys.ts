import type { FastifyRequest } from 'fastify';
import { AppError, isAppError } from '../../domain/errors.js';
import { expiryFromChoice, type KeySettingsInput } from '../../domain/keys/settings.js';
import { actorOf, callerOf, pageContext, wantsJson } from '../context.js';
import { sendHtml } from '../render.js';
import { confirmDeletePage, editKeyPage, keysPage, rollKeyPage } from '../views/keys.js';
import { needs, SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

type SettingsForm = { name?: unknown; expires?: unknown; creditLimit?: unknown; refill?: unknown; rateLimitPerMinute?: unknown; permissions?: unknown; permissionsShown?: unknown };

/**
 * The create and edit dialogs' fields as the key service takes them: an empty number field is no
 * limit, `keep` leaves the expiry, the permission checkboxes are a list (none ticked: an empty list).
 */
function settingsOf(body: SettingsForm | undefined, now: Date): KeySettingsInput {
  const settings: KeySettingsInput = {};
  if (body?.expires !== undefined && body.expires !== 'keep') {
    const at = expiryFromChoice(body.expires, now);
    settings.expiresAt = at === undefined ? String(body.expires) : at;
  }
  const limit = (value: unknown) => (value === undefined ? undefined : typeof value === 'string' && value.trim() === '' ? null : /^\d{1,15}$/.test(String(value).trim()) ? Number(String(value).trim()) : value);
  settings.creditLimit = limit(body?.creditLimit);
  settings.rateLimitPerMinute = limit(body?.rateLimitPerMinute);
  if (body?.refill !== undefined) settings.refill = body.refill === '' ? null : body.refill;
  if (body?.permissionsShown !== undefined || body?.permissions !== undefined) {
    const given = body?.permissions;
    settings.permissions = given === undefined ? [] : Array.isArray(given) ? given : [given];
  }
  return settings;
}

/** API keys: list, create (the key shown once), edit, roll (the new key shown once), delete; changes audited from `host`. */
const keyRoutes: ConsoleRoute<Pick<ConsoleServices, 'keys'> & { host: string }> = async (app, { keys, host }) => {
  const activeKeys = async (request: FastifyRequest) => (await keys.list(callerOf(request).principal.accountId)).filter((k) => !k.deletedAt);
  const ownKey = async (request: FastifyRequest<{ Params: { id: string } }>) => {
    const key = (await activeKeys(request)).find((k) => k.id === request.params.id);
    if (!key) throw new AppError('route_not_found');
    return key;
  };

  app.get('/keys', SESSION, async (request, reply) => sendHtml(reply, keysPage(pageContext(request), await activeKeys(request))));

  app.post<{ Body: SettingsForm }>('/keys', needs('keys.manage'), async (request, reply) => {
    const caller = callerOf(request);
    try {
      const created = await keys.create(caller.principal.accountId, request.body?.name, actorOf(request, host), settingsOf(request.body, new Date()));
      if (wantsJson(request)) return reply.code(201).send({ id: created.id, key: created.key, prefix: created.prefix, name: created.name, createdAt: created.createdAt });
      return sendHtml(reply.code(201), keysPage(pageContext(request), await activeKeys(request), { created }));
    } catch (err) {
      if (!isAppError(err) || err.code !== 'invalid_request' || wantsJson(request)) throw err;
      const name = typeof request.body?.name === 'string' ? request.body.name : '';
      return sendHtml(reply.code(400), keysPage(pageContext(request), await activeKeys(request), { error: err.message, name }));
    }
  });

  app.get<{ Params: { id: string } }>('/keys/:id/edit', needs('keys.manage'), async (request, reply) => sendHtml(reply, editKeyPage(pageContext(request, '/console/keys'), await ownKey(request))));

  app.post<{ Params: { id: string }; Body: SettingsForm }>('/keys/:id/edit', needs('keys.manage'), async (request, reply) => {
    const key = await ownKey(request);
    try {
      const updated = await keys.update(key.id, settingsOf(request.body, new Date()), actorOf(request, host), callerOf(request).principal.accountId);
      if (wantsJson(request)) return reply.send(updated);
      return reply.code(303).header('location', '/console/keys').send();
    } catch (err) {
      if (!isAppError(err) || err.code !== 'invalid_request' || wantsJson(request)) throw err;
      return sendHtml(reply.code(400), editKeyPage(pageContext(request, '/console/keys'), key, err.message));
    }
  });

  app.get<{ Params: { id: string } }>('/keys/:id/roll', needs('keys.manage'), async (request, reply) => sendHtml(reply, rollKeyPage(pageContext(request, '/console/keys'), await ownKey(request))));

  app.post<{ Params: { id: string }; Body: { grace?: unknown } }>('/keys/:id/roll', needs('keys.manage'), async (request, reply) => {
    const key = await ownKey(request);
    try {
      const rolled = await keys.roll(key.id, request.body?.grace ?? '0', actorOf(request, host), callerOf(request).principal.accountId);
      if (wantsJson(request)) return reply.code(201).send({ id: rolled.id, key: rolled.key, prefix: rolled.prefix, name: rolled.name, oldKeyExpiresAt: rolled.oldKeyExpiresAt });
      return sendHtml(reply.code(201), keysPage(pageContext(request), await activeKeys(request), { created: rolled, rolled: true }));
    } catch (err) {
      if (!isAppError(err) || err.code !== 'invalid_request' || wantsJson(request)) throw err;
      return sendHtml(reply.code(400), rollKeyPage(pageContext(request, '/console/keys'), key, err.message));
    }
  });

  app.get<{ Params: { id: string } }>('/keys/:id/delete', needs('keys.manage'), async (request, reply) => sendHtml(reply, confirmDeletePage(pageContext(request, '/console/keys'), await ownKey(request))));

  app.post<{ Params: { id: string } }>('/keys/:id/delete', needs('keys.manage'), async (request, reply) => {
    const deleted = await keys.delete(request.params.id, actorOf(request, host), callerOf(request).principal.accountId);
    if (wantsJson(request)) return reply.send(deleted);
    return reply.code(303).header('location', '/console/keys').send();
  });
};

export default keyRoutes;
