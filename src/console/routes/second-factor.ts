import { clientMeta } from '../context.js';
import { tooManyAttempts } from '../form-errors.js';
import { issueFormToken } from '../form-token.js';
import { nextQuery, safeNext } from '../next.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { challengeOf, clearChallenge, endPreviousSession, setSessionCookie } from '../session-cookie.js';
import { secondFactorPage } from '../views/two-factor.js';
import { OPTIONAL_SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

/**
 * The code after the password, for users with two-factor authentication. The page to return to
 * (`next`, from the sign-in form) rides along in the query and the form, checked again at each step.
 */
const secondFactorRoutes: ConsoleRoute<Pick<ConsoleServices, 'signIn' | 'sessions'>> = async (app, s) => {
  app.get('/sign-in/verify', OPTIONAL_SESSION, async (request, reply) => {
    const next = safeNext(queryParam(request, 'next'), '');
    if (!challengeOf(request)) return reply.code(303).header('location', `/console/sign-in${nextQuery(next)}`).send();
    return sendHtml(reply, secondFactorPage({ formToken: issueFormToken(reply), next }));
  });

  app.post<{ Body: { code?: unknown; next?: unknown } }>('/sign-in/verify', OPTIONAL_SESSION, async (request, reply) => {
    const next = safeNext(request.body?.next, '');
    const result = await s.signIn.completeSecondFactor(challengeOf(request), request.body?.code, clientMeta(request));
    if (result.ok) {
      await endPreviousSession(request, s.sessions);
      clearChallenge(reply, request);
      setSessionCookie(reply, request, result.token);
      return reply.code(303).header('location', next || '/console').send();
    }
    switch (result.reason) {
      case 'invalid':
        reply.code(401);
        return sendHtml(reply, secondFactorPage({ error: 'Invalid authentication code', formToken: issueFormToken(reply), next }));
      case 'throttled':
        reply.code(429).header('retry-after', String(result.retryAfterSeconds));
        return sendHtml(reply, secondFactorPage({ error: tooManyAttempts(result.retryAfterSeconds), formToken: issueFormToken(reply), next }));
      default:
        // Expired, used, or never started: sign in again.
        clearChallenge(reply, request);
        return reply.code(303).header('location', `/console/sign-in${nextQuery(next)}`).send();
    }
  });
};

export default secondFactorRoutes;
