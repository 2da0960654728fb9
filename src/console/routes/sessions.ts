import type { FastifyRequest } from 'fastify';
import { AppError, invalid } from '../../domain/errors.js';
import { actorOf, callerOf, pageContext } from '../context.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { sessionsPage } from '../views/sessions.js';
import { needs, SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

/** The user's own sessions: list them, end one, end all others; endings are audited from `host`. */
const sessionRoutes: ConsoleRoute<Pick<ConsoleServices, 'sessions' | 'signIn'> & { host: string }> = async (app, { sessions, signIn, host }) => {
  const auditSessionsEnded = (request: FastifyRequest, count: number) => {
    const caller = callerOf(request);
    return signIn.recordSessionsEnded(caller.principal.accountId, { ...actorOf(request, host), details: { userId: caller.principal.userId, count } });
  };

  app.get('/sessions', SESSION, async (request, reply) => {
    const caller = callerOf(request);
    const ended = endedParam(request);
    const notice = ended === undefined ? undefined : `Ended ${ended} session${ended === 1 ? '' : 's'}.`;
    return sendHtml(reply, sessionsPage(pageContext(request), { sessions: await sessions.list(caller.principal.userId), currentId: caller.sessionId, notice }));
  });

  app.post<{ Params: { id: string } }>('/sessions/:id/end', needs('self'), async (request, reply) => {
    const caller = callerOf(request);
    if (request.params.id === caller.sessionId) throw new AppError('invalid_request', { message: 'Use Sign out to end this session' });
    const ended = await sessions.endById(caller.principal.userId, request.params.id);
    if (ended) await auditSessionsEnded(request, 1);
    return reply.code(303).header('location', `/console/sessions?ended=${ended ? 1 : 0}`).send();
  });

  app.post('/sessions/end-others', needs('self'), async (request, reply) => {
    const caller = callerOf(request);
    const count = await sessions.endOthers(caller.principal.userId, caller.sessionId);
    if (count) await auditSessionsEnded(request, count);
    return reply.code(303).header('location', `/console/sessions?ended=${count}`).send();
  });
};

export default sessionRoutes;

/** `ended`, set by the redirects above: how many sessions an action ended (at most 100 are listed). */
function endedParam(request: FastifyRequest): number | undefined {
  const value = queryParam(request, 'ended');
  if (value === undefined) return undefined;
  if (!/^\d{1,6}$/.test(value)) throw invalid('ended', 'ended must be a whole number of sessions');
  return Number(value);
}
