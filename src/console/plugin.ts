/**
 * The console: a door for signed-in people, served by the gateway under /console (same port as the
 * APIs). Pages are rendered on the server and work without JavaScript; a small script (assets/) makes
 * dialogs, copying and the playground livelier. Handlers parse the form, call a domain service with the
 * caller's plain principal (`{accountId, userId}`) and render; rules live in the services.
 *
 * Security: the session cookie is HttpOnly, SameSite=Strict, Path=/ (Secure and `__Host-` over HTTPS);
 * the edge refuses cross-site state changes before anything is read (Sec-Fetch-Site / Origin), and
 * clients that send neither header must present their session's synchronizer token; pages carry a
 * strict Content-Security-Policy and are never cached.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { Readable } from 'node:stream';
import formbody from '@fastify/formbody';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { AuditLog } from '../domain/audit/service.js';
import type { AuditActor } from '../domain/audit/types.js';
import type { ConsoleCaller, SessionService } from '../domain/console/sessions.js';
import type { SignInService } from '../domain/console/signin.js';
import type { CreditService } from '../domain/credits/service.js';
import { AppError, isAppError } from '../domain/errors.js';
import type { KeyManager } from '../domain/keys/index.js';
import type { DefinitionService, ImageJobService } from '../domain/ports.js';
import type { UsageService } from '../domain/usage/service.js';
import { utcDay } from '../domain/usage/types.js';
import { sessionCookieName } from '../edge/auth.js';
import { originVerdict, tokensMatch } from '../edge/csrf.js';
import { errorBody, errorHeaders, translate } from '../edge/errors.js';
import type { BaseUrlOf } from '../http/routes/types.js';
import type { JobEvents } from '../queue/job-events.js';
import { watchJob } from '../queue/job-watch.js';
import { day, html, type Html } from './html.js';
import { csvRow, toCsv } from './csv.js';
import { auditPage, EVENT_LABELS, describe } from './views/audit.js';
import { jobsPage } from './views/jobs.js';
import { confirmDeletePage, keysPage } from './views/keys.js';
import { bare, page, type PageContext } from './views/layout.js';
import { overviewPage } from './views/overview.js';
import { playgroundPage, type PlaygroundState } from './views/playground.js';
import { sessionsPage } from './views/sessions.js';
import { signInPage } from './views/signin.js';
import { usagePage } from './views/usage.js';

export interface ConsoleServices {
  definitions: DefinitionService;
  jobs: ImageJobService;
  keys: KeyManager;
  credits: Pick<CreditService, 'getAccount'>;
  audit: AuditLog;
  usage: Pick<UsageService, 'forAccount'>;
  jobEvents: JobEvents;
  sessions: SessionService;
  signIn: SignInService;
}

export interface ConsoleOptions {
  config: Config;
  services: ConsoleServices;
  baseUrlOf: BaseUrlOf;
  /** Host name recorded in audit entries; default os.hostname(). */
  host?: string;
}

/** The sign-in form's double-submit token (there is no session yet to hold one). */
const FORM_COOKIE = 'console_form';
const AUDIT_PAGE_ROWS = 200;

const ASSETS: Record<string, { type: string; body: Buffer }> = {
  'console.css': { type: 'text/css; charset=utf-8', body: readFileSync(new URL('./assets/console.css', import.meta.url)) },
  'console.js': { type: 'text/javascript; charset=utf-8', body: readFileSync(new URL('./assets/console.js', import.meta.url)) },
};

export async function registerConsole(app: FastifyInstance, opts: ConsoleOptions): Promise<void> {
  const { config, services: s, baseUrlOf } = opts;
  const host = opts.host ?? hostname();
  const imageOrigin = config.PUBLIC_BASE_URL ? ` ${new URL(config.PUBLIC_BASE_URL).origin}` : '';
  const csp = `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:${imageOrigin}; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`;
  /** Open live streams, ended when the app closes so shutdown never waits on a browser. */
  const streams = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const end of streams) end();
  });

  await app.register(
    async (scope) => {
      // Forms post urlencoded bodies; only here, so the APIs keep refusing them with 415.
      await scope.register(formbody, { bodyLimit: 64 * 1024 });

      scope.addHook('onSend', async (_request, reply, payload) => {
        reply.header('content-security-policy', csp);
        reply.header('x-frame-options', 'DENY');
        reply.header('x-content-type-options', 'nosniff');
        reply.header('referrer-policy', 'same-origin');
        if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
        return payload;
      });

      // A client that sent neither Sec-Fetch-Site nor Origin must prove the form came from us.
      scope.addHook('preHandler', async (request) => {
        // Cross-site requests were refused by the edge already; this is for clients that sent neither header.
        if (request.method === 'GET' || request.method === 'HEAD' || originVerdict(request, []) !== 'needs-token') return;
        const given = (request.body as Record<string, unknown> | undefined)?._csrf ?? request.headers['x-csrf-token'];
        const expected = request.consoleCaller?.csrfToken ?? app.parseCookie(request.headers.cookie ?? '')[FORM_COOKIE];
        if (!tokensMatch(given, expected)) throw new AppError('cross_site_request');
      });

      scope.setErrorHandler((err, request, reply) => {
        const e = translate(err, request);
        if (e.code === 'not_signed_in' && !wantsJson(request)) {
          const next = request.method === 'GET' && request.url !== '/console' ? `?next=${encodeURIComponent(request.url)}` : '';
          return reply.code(303).header('location', `/console/sign-in${next}`).send();
        }
        reply.code(e.httpStatus).headers(errorHeaders(e));
        if (wantsJson(request)) return reply.type('application/json; charset=utf-8').send(errorBody(e, String(request.id)));
        return sendHtml(reply, errorPage(request, e));
      });
      scope.setNotFoundHandler((request, reply) => {
        reply.code(404);
        return wantsJson(request) ? reply.send(errorBody(new AppError('route_not_found'), String(request.id))) : sendHtml(reply, errorPage(request, new AppError('route_not_found')));
      });

      const session = { config: { auth: 'session' as const } };
      const ctxOf = (request: FastifyRequest): PageContext => {
        const caller = callerOf(request);
        return { path: request.routeOptions.url ?? request.url, email: caller.email, csrfToken: caller.csrfToken };
      };
      const actorOf = (request: FastifyRequest): AuditActor & { userAgent: string } => ({
        actor: `console:${callerOf(request).email}`,
        ip: request.ip ?? null,
        host,
        userAgent: String(request.headers['user-agent'] ?? '').slice(0, 300),
      });
      const balanceOf = async (request: FastifyRequest) => (await s.credits.getAccount(callerOf(request).principal.accountId))?.credits ?? 0;

      scope.get<{ Params: { file: string } }>('/assets/:file', async (request, reply) => {
        const asset = ASSETS[request.params.file];
        if (!asset) throw new AppError('route_not_found');
        return reply.type(asset.type).header('cache-control', 'public, max-age=300').send(asset.body);
      });

      // ---- Sign in and out --------------------------------------------------------------------
      scope.get<{ Querystring: { next?: string } }>('/sign-in', { config: { auth: 'optional-session' } }, async (request, reply) => {
        if (request.consoleCaller) return reply.code(303).header('location', safeNext(request.query.next)).send();
        return sendHtml(reply, signInPage({ formToken: formToken(reply), next: safeNext(request.query.next, '') }));
      });

      scope.post<{ Body: { email?: unknown; password?: unknown; next?: unknown } }>('/sign-in', { config: { auth: 'optional-session' } }, async (request, reply) => {
        const body = request.body ?? {};
        const meta = { ip: request.ip ?? null, userAgent: String(request.headers['user-agent'] ?? '') };
        const result = await s.signIn.signIn(body.email, body.password, meta);
        const email = typeof body.email === 'string' ? body.email.slice(0, 254) : '';
        if (!result.ok) {
          if (result.reason === 'throttled') {
            reply.code(429).header('retry-after', String(result.retryAfterSeconds));
            const minutes = Math.ceil(result.retryAfterSeconds / 60);
            return sendHtml(reply, signInPage({ email, error: `Too many attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`, formToken: formToken(reply) }));
          }
          reply.code(401);
          return sendHtml(reply, signInPage({ email, error: 'Invalid email or password', formToken: formToken(reply) }));
        }
        // A fresh session id at every sign-in; any session this browser had before is ended.
        const previous = app.parseCookie(request.headers.cookie ?? '')[sessionCookieName(request)];
        if (previous) await s.sessions.end(previous);
        setSessionCookie(reply, request, result.token);
        return reply.code(303).header('location', safeNext(typeof body.next === 'string' ? body.next : undefined)).send();
      });

      scope.post('/sign-out', { config: { auth: 'optional-session' } }, async (request, reply) => {
        const token = app.parseCookie(request.headers.cookie ?? '')[sessionCookieName(request)];
        if (token) await s.signIn.signOut(token, { ip: request.ip ?? null, userAgent: String(request.headers['user-agent'] ?? '') });
        clearSessionCookie(reply, request);
        return reply.code(303).header('location', '/console/sign-in').send();
      });

      // ---- Overview -----------------------------------------------------------------------------
      scope.get('/', session, async (request, reply) => {
        const caller = callerOf(request);
        const to = utcDay(new Date());
        const from = utcDay(to, -29);
        const [credits, usage] = await Promise.all([balanceOf(request), s.usage.forAccount(caller.principal.accountId, { from, to })]);
        return sendHtml(reply, overviewPage({ ...ctxOf(request), path: '/console' }, { credits, lowBalance: config.LOW_BALANCE_THRESHOLD, usage, from, to }));
      });

      // ---- API keys -----------------------------------------------------------------------------
      const activeKeys = async (request: FastifyRequest) => (await s.keys.list(callerOf(request).principal.accountId)).filter((k) => !k.deletedAt);

      scope.get('/keys', session, async (request, reply) => sendHtml(reply, keysPage(ctxOf(request), await activeKeys(request))));

      scope.post<{ Body: { name?: unknown } }>('/keys', session, async (request, reply) => {
        const caller = callerOf(request);
        try {
          const created = await s.keys.create(caller.principal.accountId, request.body?.name, actorOf(request));
          if (wantsJson(request)) return reply.code(201).send({ id: created.id, key: created.key, prefix: created.prefix, name: created.name, createdAt: created.createdAt });
          return sendHtml(reply.code(201), keysPage(ctxOf(request), await activeKeys(request), { created }));
        } catch (err) {
          if (!isAppError(err) || err.code !== 'invalid_request' || wantsJson(request)) throw err;
          const name = typeof request.body?.name === 'string' ? request.body.name : '';
          return sendHtml(reply.code(400), keysPage(ctxOf(request), await activeKeys(request), { error: err.message, name }));
        }
      });

      scope.get<{ Params: { id: string } }>('/keys/:id/delete', session, async (request, reply) => {
        const key = (await activeKeys(request)).find((k) => k.id === request.params.id);
        if (!key) throw new AppError('route_not_found');
        return sendHtml(reply, confirmDeletePage({ ...ctxOf(request), path: '/console/keys' }, key));
      });

      scope.post<{ Params: { id: string } }>('/keys/:id/delete', session, async (request, reply) => {
        const caller = callerOf(request);
        const deleted = await s.keys.delete(request.params.id, actorOf(request), caller.principal.accountId);
        if (wantsJson(request)) return reply.send(deleted);
        return reply.code(303).header('location', '/console/keys').send();
      });

      // ---- Usage --------------------------------------------------------------------------------
      const usageOf = async (request: FastifyRequest<{ Querystring: { from?: string; to?: string } }>) => {
        const caller = callerOf(request);
        const to = request.query.to ? request.query.to : day(utcDay(new Date()));
        const from = request.query.from ? request.query.from : day(utcDay(new Date(`${to}T00:00:00Z`), -29));
        const rows = await s.usage.forAccount(caller.principal.accountId, { from, to });
        const keys = new Map((await s.keys.list(caller.principal.accountId)).map((k) => [k.id, k]));
        const sourceName = (source: string) => {
          if (source === 'console') return 'Console playground';
          const key = keys.get(source);
          return key ? `${key.name} (${key.prefix}…)${key.deletedAt ? ' (deleted)' : ''}` : source;
        };
        return { rows, sourceName, from: new Date(`${from}T00:00:00Z`), to: new Date(`${to}T00:00:00Z`) };
      };

      scope.get<{ Querystring: { from?: string; to?: string } }>('/usage', session, async (request, reply) => {
        try {
          return sendHtml(reply, usagePage(ctxOf(request), await usageOf(request)));
        } catch (err) {
          if (!isAppError(err) || err.code !== 'invalid_request') throw err;
          const to = utcDay(new Date());
          return sendHtml(reply.code(400), usagePage(ctxOf(request), { rows: [], from: utcDay(to, -29), to, sourceName: (x) => x, error: err.message }));
        }
      });

      scope.get<{ Querystring: { from?: string; to?: string } }>('/usage.csv', session, async (request, reply) => {
        const { rows, sourceName, from, to } = await usageOf(request);
        const csv = toCsv(
          ['day', 'service', 'source', 'key', 'calls', 'credits', 'refunded'],
          rows.map((r) => [day(r.day), r.service, r.source, sourceName(r.source), r.calls, r.credits, r.refunded]),
        );
        return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="usage-${day(from)}-${day(to)}.csv"`).send(csv);
      });

      // ---- Audit log ----------------------------------------------------------------------------
      type AuditQuery = { Querystring: { event?: string; from?: string; to?: string } };
      scope.get<AuditQuery>('/audit', session, async (request, reply) => {
        const caller = callerOf(request);
        try {
          const filter = s.audit.parseSearch(request.query);
          const entries = await collect(s.audit.search(caller.principal.accountId, request.query, AUDIT_PAGE_ROWS));
          return sendHtml(reply, auditPage(ctxOf(request), { entries, filter: { event: filter.events[0] ?? '', ...filter }, limit: AUDIT_PAGE_ROWS }));
        } catch (err) {
          if (!isAppError(err) || err.code !== 'invalid_request') throw err;
          const filter = s.audit.parseSearch({});
          return sendHtml(reply.code(400), auditPage(ctxOf(request), { entries: [], filter: { event: '', ...filter }, limit: AUDIT_PAGE_ROWS, error: err.message }));
        }
      });

      // Exports stream the whole filtered range (90 days at most are kept), one entry at a time.
      scope.get<AuditQuery>('/audit.jsonl', session, async (request, reply) => {
        const entries = s.audit.search(callerOf(request).principal.accountId, request.query);
        async function* lines() {
          for await (const e of entries) yield `${JSON.stringify(e)}\n`;
        }
        return reply
          .type('application/x-ndjson; charset=utf-8')
          .header('content-disposition', 'attachment; filename="audit.jsonl"')
          .send(Readable.from(lines()));
      });

      scope.get<AuditQuery>('/audit.csv', session, async (request, reply) => {
        const entries = s.audit.search(callerOf(request).principal.accountId, request.query);
        async function* lines() {
          yield csvRow(['time', 'event', 'event_label', 'actor', 'ip', 'details', 'key_id']);
          for await (const e of entries) yield csvRow([e.createdAt, e.event, EVENT_LABELS[e.event] ?? e.event, e.actor, e.ip ?? '', describe(e), e.keyId ?? '']);
        }
        return reply.type('text/csv; charset=utf-8').header('content-disposition', 'attachment; filename="audit.csv"').send(Readable.from(lines()));
      });

      // ---- Jobs ---------------------------------------------------------------------------------
      scope.get<{ Querystring: { after?: string } }>('/jobs', session, async (request, reply) => {
        const caller = callerOf(request);
        const page = await s.jobs.list(caller.principal, { first: 20, after: request.query.after ?? null }, { baseUrl: baseUrlOf(request) });
        return sendHtml(reply, jobsPage(ctxOf(request), { jobs: page.items, next: page.nextCursor }));
      });

      // ---- Playground ---------------------------------------------------------------------------
      const playground = async (request: FastifyRequest, reply: FastifyReply, state: Omit<PlaygroundState, 'credits'>) =>
        sendHtml(reply, playgroundPage({ ...ctxOf(request), path: '/console/playground' }, { credits: await balanceOf(request), ...state }));

      scope.get<{ Querystring: { job?: string } }>('/playground', session, async (request, reply) => {
        const job = request.query.job ? await s.jobs.get(callerOf(request).principal, request.query.job, { baseUrl: baseUrlOf(request) }) : undefined;
        return playground(request, reply, { job });
      });

      scope.post<{ Body: { keyword?: unknown } }>('/playground/lookup', session, async (request, reply) => {
        const keyword = request.body?.keyword;
        try {
          const definition = await s.definitions.lookup(callerOf(request).principal, keyword);
          if (wantsJson(request)) return reply.send(definition);
          return playground(request, reply, { keyword: String(keyword), definition });
        } catch (err) {
          const e = translate(err, request);
          if (wantsJson(request) || e.httpStatus >= 500) throw e;
          return playground(request, reply.code(e.httpStatus), { keyword: typeof keyword === 'string' ? keyword : '', lookupError: e.message });
        }
      });

      scope.post<{ Body: { prompts?: unknown } }>('/playground/generate', session, async (request, reply) => {
        const text = typeof request.body?.prompts === 'string' ? request.body.prompts : '';
        // One prompt per line; blank lines are spacing, not prompts.
        const prompts = text.split(/\r?\n/).map((p) => p.trim()).filter(Boolean);
        try {
          const created = await s.jobs.create(callerOf(request).principal, prompts);
          if (wantsJson(request)) return reply.code(201).send(created);
          const job = await s.jobs.get(callerOf(request).principal, created.jobId, { baseUrl: baseUrlOf(request) });
          return playground(request, reply.code(201), { prompts: text, created, job });
        } catch (err) {
          const e = translate(err, request);
          if (wantsJson(request) || e.httpStatus >= 500) throw e;
          return playground(request, reply.code(e.httpStatus), { prompts: text, generateError: e.message.replace(/^prompts/, 'Prompts') });
        }
      });

      // Live progress of one job as server-sent events: each state change, then `balance` at the end.
      scope.get<{ Params: { id: string } }>('/playground/jobs/:id/events', session, async (request, reply) => {
        const caller = callerOf(request);
        const abort = new AbortController();
        const stream = await watchJob(
          { services: { jobs: s.jobs, jobEvents: s.jobEvents }, principal: caller.principal, urls: { baseUrl: baseUrlOf(request) }, signal: abort.signal },
          request.params.id,
        );
        reply.hijack();
        const raw = reply.raw;
        raw.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-store',
          'content-security-policy': csp,
          'x-content-type-options': 'nosniff',
          'x-request-id': String(request.id),
        });
        const end = () => {
          void stream.return?.();
          raw.end();
        };
        streams.add(end);
        raw.on('close', () => {
          streams.delete(end);
          void stream.return?.();
        });
        try {
          for await (const view of stream) raw.write(`event: job\ndata: ${JSON.stringify(view)}\n\n`);
          raw.write(`event: balance\ndata: ${JSON.stringify({ credits: await balanceOf(request) })}\n\n`);
        } catch (err) {
          request.log.warn({ err, requestId: request.id }, 'console: job stream ended by an error');
        } finally {
          streams.delete(end);
          raw.end();
        }
      });

      // ---- Sessions -----------------------------------------------------------------------------
      scope.get<{ Querystring: { ended?: string } }>('/sessions', session, async (request, reply) => {
        const caller = callerOf(request);
        const notice = request.query.ended ? `Ended ${Number(request.query.ended) || 0} session${request.query.ended === '1' ? '' : 's'}.` : undefined;
        return sendHtml(reply, sessionsPage(ctxOf(request), { sessions: await s.sessions.list(caller.principal.userId), currentId: caller.sessionId, notice }));
      });

      scope.post<{ Params: { id: string } }>('/sessions/:id/end', session, async (request, reply) => {
        const caller = callerOf(request);
        if (request.params.id === caller.sessionId) throw new AppError('invalid_request', { message: 'Use Sign out to end this session' });
        const ended = await s.sessions.endById(caller.principal.userId, request.params.id);
        if (ended) await auditSessionsEnded(request, 1);
        return reply.code(303).header('location', `/console/sessions?ended=${ended ? 1 : 0}`).send();
      });

      scope.post('/sessions/end-others', session, async (request, reply) => {
        const caller = callerOf(request);
        const count = await s.sessions.endOthers(caller.principal.userId, caller.sessionId);
        if (count) await auditSessionsEnded(request, count);
        return reply.code(303).header('location', `/console/sessions?ended=${count}`).send();
      });

      const auditSessionsEnded = (request: FastifyRequest, count: number) => {
        const caller = callerOf(request);
        return s.signIn.recordSessionsEnded(caller.principal.accountId, { ...actorOf(request), details: { userId: caller.principal.userId, count } });
      };
    },
    { prefix: '/console' },
  );

  function setSessionCookie(reply: FastifyReply, request: FastifyRequest, token: string): void {
    reply.header('set-cookie', app.serializeCookie(sessionCookieName(request), token, cookieOptions(request)));
  }

  function clearSessionCookie(reply: FastifyReply, request: FastifyRequest): void {
    reply.header('set-cookie', app.serializeCookie(sessionCookieName(request), '', { ...cookieOptions(request), maxAge: 0 }));
  }

  /** A double-submit token for the sign-in form, in a cookie and in the form. */
  function formToken(reply: FastifyReply): string {
    const token = randomBytes(18).toString('base64url');
    reply.header('set-cookie', app.serializeCookie(FORM_COOKIE, token, { httpOnly: true, sameSite: 'strict', path: '/console' }));
    return token;
  }
}

function cookieOptions(request: FastifyRequest) {
  return { httpOnly: true, sameSite: 'strict' as const, path: '/', secure: request.protocol === 'https' };
}

function callerOf(request: FastifyRequest): ConsoleCaller {
  if (!request.consoleCaller) throw new AppError('not_signed_in');
  return request.consoleCaller;
}

function wantsJson(request: FastifyRequest): boolean {
  return /\bapplication\/json\b/.test(String(request.headers.accept ?? ''));
}

/** Only console paths: a `next` parameter never sends anyone to another site. */
function safeNext(next: string | undefined, fallback = '/console'): string {
  return typeof next === 'string' && /^\/console(\/[\w\-./?=&%]*)?$/.test(next) && !next.includes('//') ? next : fallback;
}

function sendHtml(reply: FastifyReply, body: Html): FastifyReply {
  return reply.type('text/html; charset=utf-8').send(body.value);
}

function errorPage(request: FastifyRequest, e: AppError): Html {
  const content = html`<p class="error" role="alert">${e.message}</p><p><a href="/console">Back to the console</a></p>`;
  const title = e.httpStatus === 404 ? 'Not found' : e.httpStatus === 403 ? 'Refused' : 'Something went wrong';
  return request.consoleCaller
    ? page({ path: '', email: request.consoleCaller.email, csrfToken: request.consoleCaller.csrfToken }, title, content)
    : bare(title, html`<div class="card narrow"><h1>${title}</h1>${content}</div>`);
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
