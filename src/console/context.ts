/** What a console handler reads off a request: the signed-in caller and the page and audit context. */
import type { FastifyRequest } from 'fastify';
import type { AuditActor } from '../domain/audit/types.js';
import type { ClientMeta, ConsoleCaller } from '../domain/console/sessions.js';
import { AppError } from '../domain/errors.js';
import type { ConsoleServices } from './routes/types.js';
import type { PageContext } from './views/layout.js';

export function callerOf(request: FastifyRequest): ConsoleCaller {
  if (!request.consoleCaller) throw new AppError('not_signed_in');
  return request.consoleCaller;
}

/** The layout's context: who is signed in, their form token, and the path that marks the nav link. */
export function pageContext(request: FastifyRequest, path?: string): PageContext {
  return contextOf(callerOf(request), path ?? request.routeOptions.url ?? request.url);
}

export function contextOf(caller: ConsoleCaller, path: string): PageContext {
  return { path, email: caller.email, csrfToken: caller.csrfToken, role: caller.role, accountId: caller.principal.accountId, accounts: caller.accounts };
}

export function clientMeta(request: FastifyRequest): ClientMeta {
  return { ip: request.ip ?? null, userAgent: String(request.headers['user-agent'] ?? '') };
}

/** Who did it, for audit entries; `host` is the gateway's host name. */
export function actorOf(request: FastifyRequest, host: string): AuditActor & { userAgent: string } {
  return { actor: `console:${callerOf(request).email}`, ip: request.ip ?? null, host, userAgent: clientMeta(request).userAgent.slice(0, 300) };
}

export async function balanceOf(credits: ConsoleServices['credits'], request: FastifyRequest): Promise<number> {
  return (await credits.getAccount(callerOf(request).principal.accountId))?.credits ?? 0;
}

/** Scripts and API-minded clients ask for JSON; browsers get pages. */
export function wantsJson(request: FastifyRequest): boolean {
  return /\bapplication\/json\b/.test(String(request.headers.accept ?? ''));
}
