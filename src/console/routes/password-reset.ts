import type { BaseUrlOf } from '../../http/routes/types.js';
import { clientMeta } from '../context.js';
import { fieldError, tooManyAttempts } from '../form-errors.js';
import { issueFormToken } from '../form-token.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { clearSessionCookie } from '../session-cookie.js';
import { forgotPasswordPage, resetPasswordPage } from '../views/password.js';
import { linkExpiredPage } from '../views/signup.js';
import { OPTIONAL_SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

const FORGOT_AGAIN = { href: '/console/forgot-password', label: 'Send a new reset link' };

/** Forgot password (the emailed link) and the link's page, which sets a new one and ends every session. */
const passwordResetRoutes: ConsoleRoute<Pick<ConsoleServices, 'passwords'> & { baseUrlOf: BaseUrlOf }> = async (app, s) => {
  app.get('/forgot-password', OPTIONAL_SESSION, async (_request, reply) => sendHtml(reply, forgotPasswordPage({ formToken: issueFormToken(reply) })));

  app.post<{ Body: { email?: unknown } }>('/forgot-password', OPTIONAL_SESSION, async (request, reply) => {
    const email = typeof request.body?.email === 'string' ? request.body.email.slice(0, 254) : '';
    let result;
    try {
      result = await s.passwords.requestReset(request.body?.email, { ...clientMeta(request), baseUrl: s.baseUrlOf(request) });
    } catch (err) {
      const error = fieldError(err);
      reply.code(400);
      return sendHtml(reply, forgotPasswordPage({ email, error, formToken: issueFormToken(reply) }));
    }
    if (!result.ok) {
      reply.code(429).header('retry-after', String(result.retryAfterSeconds));
      return sendHtml(reply, forgotPasswordPage({ email, error: tooManyAttempts(result.retryAfterSeconds), formToken: issueFormToken(reply) }));
    }
    return sendHtml(reply, forgotPasswordPage({ sent: true, formToken: issueFormToken(reply) }));
  });

  app.get('/reset-password', OPTIONAL_SESSION, async (request, reply) => {
    const token = queryParam(request, 'token') ?? '';
    if (!(await s.passwords.canReset(token))) {
      reply.code(410);
      return sendHtml(reply, linkExpiredPage(FORGOT_AGAIN));
    }
    return sendHtml(reply, resetPasswordPage({ token, formToken: issueFormToken(reply) }));
  });

  app.post<{ Body: { token?: unknown; newPassword?: unknown } }>('/reset-password', OPTIONAL_SESSION, async (request, reply) => {
    const token = typeof request.body?.token === 'string' ? request.body.token.slice(0, 100) : '';
    let result;
    try {
      result = await s.passwords.reset(token, request.body?.newPassword, clientMeta(request));
    } catch (err) {
      const error = fieldError(err);
      reply.code(400);
      return sendHtml(reply, resetPasswordPage({ token, error, formToken: issueFormToken(reply) }));
    }
    if (!result.ok) {
      reply.code(410);
      return sendHtml(reply, linkExpiredPage(FORGOT_AGAIN));
    }
    // Every session of the user ended, this browser's included.
    clearSessionCookie(reply, request);
    return reply.code(303).header('location', '/console/sign-in?reset=1').send();
  });
};

export default passwordResetRoutes;
