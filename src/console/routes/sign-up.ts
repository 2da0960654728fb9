import type { BaseUrlOf } from '../../http/routes/types.js';
import { clientMeta } from '../context.js';
import { fieldError, tooManyAttempts } from '../form-errors.js';
import { issueFormToken } from '../form-token.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { endPreviousSession, setSessionCookie } from '../session-cookie.js';
import { checkEmailPage, linkExpiredPage, signUpPage } from '../views/signup.js';
import { OPTIONAL_SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

type Form = { accountName?: unknown; email?: unknown; password?: unknown };

/** Self-serve sign-up (registered only with SIGNUP=open): the form, its one answer, and the emailed link. */
const signUpRoutes: ConsoleRoute<Pick<ConsoleServices, 'signUp' | 'sessions'> & { baseUrlOf: BaseUrlOf }> = async (app, s) => {
  app.get('/sign-up', OPTIONAL_SESSION, async (_request, reply) => sendHtml(reply, signUpPage({ formToken: issueFormToken(reply) })));

  app.post<{ Body: Form }>('/sign-up', OPTIONAL_SESSION, async (request, reply) => {
    const body = request.body ?? {};
    const again = (error: string) =>
      sendHtml(reply, signUpPage({ accountName: text(body.accountName, 200), email: text(body.email, 254), error, formToken: issueFormToken(reply) }));
    let result;
    try {
      result = await s.signUp.request(body, { ...clientMeta(request), baseUrl: s.baseUrlOf(request) });
    } catch (err) {
      const message = fieldError(err);
      reply.code(400);
      return again(message);
    }
    if (!result.ok) {
      reply.code(429).header('retry-after', String(result.retryAfterSeconds));
      return again(tooManyAttempts(result.retryAfterSeconds));
    }
    return sendHtml(reply, checkEmailPage());
  });

  app.get('/verify-email', OPTIONAL_SESSION, async (request, reply) => {
    const result = await s.signUp.verify(queryParam(request, 'token'), clientMeta(request));
    if (!result.ok) {
      reply.code(410);
      return sendHtml(reply, linkExpiredPage({ href: '/console/sign-up', label: 'Sign up again' }));
    }
    await endPreviousSession(request, s.sessions);
    setSessionCookie(reply, request, result.token);
    return reply.code(303).header('location', '/console').send();
  });
};

export default signUpRoutes;

function text(value: unknown, max: number): string {
  return typeof value === 'string' ? value.slice(0, max) : '';
}

