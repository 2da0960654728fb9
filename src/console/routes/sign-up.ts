import type { FastifyReply, FastifyRequest } from 'fastify';
import { UnreachableCaseError } from '../../domain/errors.js';
import type { VerifyResult } from '../../domain/identity/signup.js';
import type { BaseUrlOf } from '../../http/routes/types.js';
import { clientMeta } from '../context.js';
import { fieldError, tooManyAttempts } from '../form-errors.js';
import { issueFormToken } from '../form-token.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { endPreviousSession, markSignUpBrowser, setSessionCookie, signUpBrowserOf } from '../session-cookie.js';
import { checkEmailPage, finishSignUpPage, linkExpiredPage, signUpPage } from '../views/signup.js';
import { OPTIONAL_SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

type Form = { accountName?: unknown; email?: unknown; password?: unknown };

/**
 * Self-serve sign-up (registered only with SIGNUP=open): the form, its one answer, and the emailed
 * link, which signs in at once in the browser that sent the form and asks for the password elsewhere.
 */
const signUpRoutes: ConsoleRoute<Pick<ConsoleServices, 'signUp' | 'sessions'> & { baseUrlOf: BaseUrlOf }> = async (app, s) => {
  app.get('/sign-up', OPTIONAL_SESSION, async (_request, reply) => sendHtml(reply, signUpPage({ formToken: issueFormToken(reply) })));

  app.post<{ Body: Form }>('/sign-up', OPTIONAL_SESSION, async (request, reply) => {
    const body = request.body ?? {};
    const again = (error: string) =>
      sendHtml(reply, signUpPage({ accountName: text(body.accountName, 200), email: text(body.email, 254), error, formToken: issueFormToken(reply) }));
    // Marked whatever the address: the answer must not tell a taken one apart.
    const browser = markSignUpBrowser(reply, request);
    let result;
    try {
      result = await s.signUp.request(body, { ...clientMeta(request), baseUrl: s.baseUrlOf(request), browser });
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
    const token = queryParam(request, 'token');
    return answer(request, reply, token ?? '', await s.signUp.verify(token, { browser: signUpBrowserOf(request) }, clientMeta(request)));
  });

  app.post<{ Body: { token?: unknown; password?: unknown } }>('/verify-email', OPTIONAL_SESSION, async (request, reply) => {
    const token = typeof request.body?.token === 'string' ? request.body.token.slice(0, 100) : '';
    return answer(request, reply, token, await s.signUp.verify(token, { password: request.body?.password }, clientMeta(request)));
  });

  async function answer(request: FastifyRequest, reply: FastifyReply, token: string, result: VerifyResult) {
    if (result.ok) {
      await endPreviousSession(request, s.sessions);
      setSessionCookie(reply, request, result.token);
      return reply.code(303).header('location', '/console').send();
    }
    switch (result.reason) {
      case 'expired':
        reply.code(410);
        return sendHtml(reply, linkExpiredPage({ href: '/console/sign-up', label: 'Sign up again' }));
      case 'password_needed':
        return sendHtml(reply, finishSignUpPage({ token, formToken: issueFormToken(reply) }));
      case 'wrong_password':
        reply.code(401);
        return sendHtml(reply, finishSignUpPage({ token, formToken: issueFormToken(reply), error: 'Incorrect password' }));
      case 'throttled':
        reply.code(429).header('retry-after', String(result.retryAfterSeconds));
        return sendHtml(reply, finishSignUpPage({ token, formToken: issueFormToken(reply), error: tooManyAttempts(result.retryAfterSeconds) }));
      default:
        throw new UnreachableCaseError(result);
    }
  }
};

export default signUpRoutes;

function text(value: unknown, max: number): string {
  return typeof value === 'string' ? value.slice(0, max) : '';
}

