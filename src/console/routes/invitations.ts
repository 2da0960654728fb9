import type { FastifyReply, FastifyRequest } from 'fastify';
import { isAppError } from '../../domain/errors.js';
import { clientMeta } from '../context.js';
import { issueFormToken } from '../form-token.js';
import { sendHtml } from '../render.js';
import { invitationGonePage, joinPage, wrongUserPage } from '../views/invitations.js';
import { setSessionCookie } from '../session-cookie.js';
import { OPTIONAL_SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

/**
 * An invitation link, `/console/invitations/accept?token=…`, under either SIGNUP: a signed-in user
 * with the invited email joins at once; a known email signs in first (and comes back here); a new
 * email sets a password and joins.
 */
const invitationRoutes: ConsoleRoute<Pick<ConsoleServices, 'invitations' | 'sessions'> & { host: string }> = async (app, { invitations, sessions, host }) => {
  const actorOf = (request: FastifyRequest, email: string) => ({ actor: `console:${email}`, ip: request.ip ?? null, host, userAgent: clientMeta(request).userAgent.slice(0, 300) });
  const gone = (reply: FastifyReply) => sendHtml(reply.code(410), invitationGonePage());

  app.get<{ Querystring: { token?: string } }>('/invitations/accept', OPTIONAL_SESSION, async (request, reply) => {
    const token = typeof request.query.token === 'string' ? request.query.token : '';
    const invitation = await invitations.open(token);
    if (!invitation) return gone(reply);
    const caller = request.consoleCaller;
    const here = `/console/invitations/accept?token=${encodeURIComponent(token)}`;
    if (caller && caller.email !== invitation.email) return sendHtml(reply, wrongUserPage({ invitation, email: caller.email, csrfToken: caller.csrfToken, next: here }));
    if (caller) {
      // Only a same-site navigation carries the SameSite=Strict cookie: no other site can make a member join.
      try {
        await invitations.acceptAsUser(token, { userId: caller.principal.userId, email: caller.email }, actorOf(request, caller.email));
      } catch (err) {
        if (isAppError(err) && err.code === 'invitation_invalid') return gone(reply);
        if (!isAppError(err) || err.code !== 'already_member') throw err;
      }
      await sessions.switchAccount(caller.sessionId, invitation.accountId);
      return reply.code(303).header('location', '/console').send();
    }
    if (invitation.userExists) return reply.code(303).header('location', `/console/sign-in?next=${encodeURIComponent(here)}`).send();
    return sendHtml(reply, joinPage({ invitation, token, formToken: issueFormToken(reply) }));
  });

  app.post<{ Body: { token?: unknown; password?: unknown } }>('/invitations/accept', OPTIONAL_SESSION, async (request, reply) => {
    const token = typeof request.body?.token === 'string' ? request.body.token : '';
    const invitation = await invitations.open(token);
    if (!invitation) return gone(reply);
    try {
      const outcome = await invitations.acceptAsNewUser(token, request.body?.password, actorOf(request, invitation.email));
      if (outcome.kind === 'sign_in') {
        return reply.code(303).header('location', `/console/sign-in?next=${encodeURIComponent(`/console/invitations/accept?token=${token}`)}`).send();
      }
      const started = await sessions.start(outcome.user, clientMeta(request));
      setSessionCookie(reply, request, started.token);
      return reply.code(303).header('location', '/console').send();
    } catch (err) {
      if (isAppError(err) && err.code === 'invitation_invalid') return gone(reply);
      if (!isAppError(err) || err.code !== 'invalid_request') throw err;
      return sendHtml(reply.code(400), joinPage({ invitation, token, formToken: issueFormToken(reply), error: err.message.replace(/^password/, 'Password') }));
    }
  });
};

export default invitationRoutes;
