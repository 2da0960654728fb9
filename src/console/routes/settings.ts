import type { FastifyReply, FastifyRequest } from 'fastify';
import { callerOf, clientMeta, pageContext } from '../context.js';
import { fieldError } from '../form-errors.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { settingsPage, type SettingsView } from '../views/settings.js';
import { SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

const NOTICES: Record<string, string> = {
  password: 'Your password is changed. Your other sessions were signed out.',
};

/** Settings: the user's password (and, in the same page, their second factor). */
const settingsRoutes: ConsoleRoute<Pick<ConsoleServices, 'passwords'>> = async (app, s) => {
  const render = (request: FastifyRequest, reply: FastifyReply, view: SettingsView) => sendHtml(reply, settingsPage(pageContext(request, '/console/settings'), view));

  app.get('/settings', SESSION, async (request, reply) => {
    const done = queryParam(request, 'done');
    return render(request, reply, { notice: done ? NOTICES[done] : undefined });
  });

  app.post<{ Body: { currentPassword?: unknown; newPassword?: unknown } }>('/settings/password', SESSION, async (request, reply) => {
    let result;
    try {
      result = await s.passwords.change(callerOf(request), request.body?.currentPassword, request.body?.newPassword, clientMeta(request));
    } catch (err) {
      const passwordError = fieldError(err);
      reply.code(400);
      return render(request, reply, { passwordError });
    }
    if (!result.ok) {
      reply.code(400);
      return render(request, reply, { passwordError: 'Current password is incorrect' });
    }
    return reply.code(303).header('location', '/console/settings?done=password').send();
  });
};

export default settingsRoutes;
