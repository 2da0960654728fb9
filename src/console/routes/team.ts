import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, isAppError } from '../../domain/errors.js';
import type { TeamActor } from '../../domain/team/members.js';
import { actorOf, callerOf, pageContext, wantsJson } from '../context.js';
import type { BaseUrlOf } from '../../http/routes/types.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { confirmRemovePage, confirmSwitchPage, teamPage, type TeamPageData } from '../views/team.js';
import { needs, SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

/** What a redirect after a change tells the page to say. */
const NOTICES: Record<string, string> = {
  role: 'Role saved.',
  removed: 'Member removed. They were signed out of this account.',
  require2fa: 'Two-factor requirement saved.',
  invited: 'Invitation sent.',
  revoked: 'Invitation revoked.',
};

/** Refusals a person can act on are shown on the Team page itself; the rest are error pages. */
const SHOWN_ON_PAGE = new Set(['last_owner', 'member_not_found', 'invalid_request', 'already_member', 'invitation_not_found', 'too_many_attempts', 'two_factor_required']);

type Deps = Pick<ConsoleServices, 'team' | 'invitations' | 'sessions'> & { host: string; baseUrlOf: BaseUrlOf };

/** The Team page: members and their roles, removal, leaving, the owners' two-factor requirement; and the account switcher. */
const teamRoutes: ConsoleRoute<Deps> = async (app, { team, invitations, sessions, host, baseUrlOf }) => {
  const actor = (request: FastifyRequest): TeamActor & { userId: string } => {
    const caller = callerOf(request);
    return { accountId: caller.principal.accountId, userId: caller.principal.userId, role: caller.role, audit: actorOf(request, host) };
  };
  const render = async (request: FastifyRequest, reply: FastifyReply, extra: Partial<TeamPageData> = {}) => {
    const caller = callerOf(request);
    const [view, pending] = await Promise.all([team.view(caller.principal.accountId), invitations.pending(caller.principal.accountId)]);
    return sendHtml(reply, teamPage(pageContext(request, '/console/team'), { userId: caller.principal.userId, invitations: pending, ...view, ...extra }));
  };
  /** Runs a change; a refusal the person can act on is shown on the page (JSON clients get the error). */
  const change = async (request: FastifyRequest, reply: FastifyReply, run: () => Promise<unknown>, done: string, form?: TeamPageData['invite']) => {
    try {
      const result = await run();
      if (wantsJson(request)) return reply.send(result ?? { ok: true });
      return reply.code(303).header('location', `/console/team?done=${done}`).send();
    } catch (err) {
      if (!isAppError(err) || !SHOWN_ON_PAGE.has(err.code) || wantsJson(request)) throw err;
      if (err.retryAfter) reply.header('retry-after', String(err.retryAfter));
      return render(request, reply.code(err.httpStatus), { error: err.message, invite: form });
    }
  };

  app.get('/team', SESSION, async (request, reply) => {
    const done = queryParam(request, 'done');
    return render(request, reply, { notice: done ? NOTICES[done] : undefined });
  });

  app.post<{ Body: { email?: unknown; role?: unknown } }>('/team/invitations', needs('members.manage'), async (request, reply) => {
    const form = { email: typeof request.body?.email === 'string' ? request.body.email.slice(0, 254) : '', role: typeof request.body?.role === 'string' ? request.body.role : '' };
    const caller = callerOf(request);
    return change(request, reply, () => invitations.invite({ ...actor(request), email: caller.email }, { email: request.body?.email, role: request.body?.role }, baseUrlOf(request)), 'invited', form);
  });

  app.post<{ Params: { id: string } }>('/team/invitations/:id/revoke', needs('members.manage'), async (request, reply) =>
    change(request, reply, () => invitations.revoke(actor(request), request.params.id), 'revoked'),
  );

  app.post<{ Params: { id: string }; Body: { role?: unknown } }>('/team/members/:id/role', needs('members.manage'), async (request, reply) =>
    change(request, reply, () => team.changeRole(actor(request), request.params.id, request.body?.role), 'role'),
  );

  app.get<{ Params: { id: string } }>('/team/members/:id/remove', needs('members.manage'), async (request, reply) => {
    const member = (await team.view(callerOf(request).principal.accountId)).members.find((m) => m.userId === request.params.id);
    if (!member) throw new AppError('member_not_found');
    return sendHtml(reply, confirmRemovePage(pageContext(request, '/console/team'), member));
  });

  app.post<{ Params: { id: string } }>('/team/members/:id/remove', needs('members.manage'), async (request, reply) =>
    change(request, reply, () => team.remove(actor(request), request.params.id), 'removed'),
  );

  app.post<{ Body: { require2fa?: unknown } }>('/team/require-2fa', needs('account.require2fa'), async (request, reply) =>
    change(request, reply, () => team.setRequire2fa(actor(request), request.body?.require2fa === 'on' || request.body?.require2fa === true), 'require2fa'),
  );

  // Leaving ends the user's sessions in the account; this one moves to another of their accounts if they have one.
  app.post('/team/leave', needs('self'), async (request, reply) => {
    const caller = callerOf(request);
    const next = caller.accounts.find((a) => a.id !== caller.principal.accountId);
    try {
      if (next) await sessions.switchAccount(caller.sessionId, next.id);
      await team.leave(actor(request));
    } catch (err) {
      if (next) await sessions.switchAccount(caller.sessionId, caller.principal.accountId);
      if (!isAppError(err) || !SHOWN_ON_PAGE.has(err.code) || wantsJson(request)) throw err;
      return render(request, reply.code(err.httpStatus), { error: err.message });
    }
    if (wantsJson(request)) return reply.send({ left: caller.principal.accountId, accountId: next?.id ?? null });
    return reply.code(303).header('location', next ? '/console' : '/console/sign-in').send();
  });

  // The account switcher: a link per account (a page with a form without JavaScript), then a POST.
  const accountOf = (request: FastifyRequest<{ Params: { id: string } }>) => {
    const account = callerOf(request).accounts.find((a) => a.id === request.params.id);
    if (!account) throw new AppError('route_not_found');
    return account;
  };
  app.get<{ Params: { id: string } }>('/accounts/:id/switch', needs('self'), async (request, reply) =>
    sendHtml(reply, confirmSwitchPage(pageContext(request, ''), accountOf(request))),
  );
  app.post<{ Params: { id: string } }>('/accounts/:id/switch', needs('self'), async (request, reply) => {
    const account = accountOf(request);
    await sessions.switchAccount(callerOf(request).sessionId, account.id);
    if (wantsJson(request)) return reply.send({ accountId: account.id, name: account.name });
    return reply.code(303).header('location', '/console').send();
  });
};

export default teamRoutes;
