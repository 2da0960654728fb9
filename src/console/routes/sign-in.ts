import { sessionCookieName } from '../../edge/auth.js';
import { clientMeta } from '../context.js';
import { issueFormToken } from '../form-token.js';
import { nextQuery, safeNext } from '../next.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { clearSessionCookie, setChallenge, setSessionCookie } from '../session-cookie.js';
import { signInPage } from '../views/signin.js';
import { OPTIONAL_SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

/** Sign in (GET the form, POST it) and sign out: the only console doors open without a session. */
const signInRoutes: ConsoleRoute<Pick<ConsoleServices, 'signIn' | 'sessions'> & { signupOpen: boolean }> = async (app, s) => {
  app.get<{ Querystring: { next?: string } }>('/sign-in', OPTIONAL_SESSION, async (request, reply) => {
    if (request.consoleCaller) return reply.code(303).header('location', safeNext(request.query.next)).send();
    const notice = queryParam(request, 'reset') === '1' ? 'Your new password is set. Sign in with it.' : undefined;
    return sendHtml(reply, signInPage({ formToken: issueFormToken(reply), next: safeNext(request.query.next, ''), notice, signupOpen: s.signupOpen }));
  });

  app.post<{ Body: { email?: unknown; password?: unknown; next?: unknown } }>('/sign-in', OPTIONAL_SESSION, async (request, reply) => {
    const body = request.body ?? {};
    const result = await s.signIn.signIn(body.email, body.password, clientMeta(request));
    const email = typeof body.email === 'string' ? body.email.slice(0, 254) : '';
    const next = safeNext(body.next, '');
    if (!result.ok) {
      if (result.reason === 'second_factor') {
        // The page to return to goes on to the code step, which follows it once the code is right.
        setChallenge(reply, request, result.challenge);
        return reply.code(303).header('location', `/console/sign-in/verify${nextQuery(next)}`).send();
      }
      if (result.reason === 'throttled') {
        reply.code(429).header('retry-after', String(result.retryAfterSeconds));
        const minutes = Math.ceil(result.retryAfterSeconds / 60);
        return sendHtml(reply, signInPage({ email, error: `Too many attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`, formToken: issueFormToken(reply), next, signupOpen: s.signupOpen }));
      }
      reply.code(401);
      return sendHtml(reply, signInPage({ email, error: 'Invalid email or password', formToken: issueFormToken(reply), next, signupOpen: s.signupOpen }));
    }
    // A fresh session id at every sign-in; any session this browser had before is ended.
    const previous = app.parseCookie(request.headers.cookie ?? '')[sessionCookieName(request)];
    if (previous) await s.sessions.end(previous);
    setSessionCookie(reply, request, result.token);
    return reply.code(303).header('location', next || '/console').send();
  });

  app.post('/sign-out', OPTIONAL_SESSION, async (request, reply) => {
    const token = app.parseCookie(request.headers.cookie ?? '')[sessionCookieName(request)];
    if (token) await s.signIn.signOut(token, clientMeta(request));
    clearSessionCookie(reply, request);
    return reply.code(303).header('location', '/console/sign-in').send();
  });
};

export default signInRoutes;
