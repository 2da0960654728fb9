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
 *
 * This file only wires: the scope-wide hooks, then one module per section (`routes/`). To add a page:
 *  1. write `routes/<section>.ts`, a `ConsoleRoute` (routes/types.ts) that takes a `Pick<>` of
 *     ConsoleServices (plus any plain values it needs) and registers its routes relative to /console,
 *     with `SESSION` as route options (a public route must also be listed in test/security/doors.test.ts);
 *     it renders with `sendHtml(reply, view(pageContext(request), …))` and throws AppError for refusals;
 *  2. put its view in `views/<section>.ts` (built on `page()` from views/layout.ts);
 *  3. add its nav entry to `NAV` in views/layout.ts;
 *  4. register it below, handing it only the services it calls.
 */
import { hostname } from 'node:os';
import formbody from '@fastify/formbody';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import type { BaseUrlOf } from '../http/routes/types.js';
import { consoleErrorHandler, consoleNotFound } from './errors.js';
import { checkFormToken } from './form-token.js';
import { requireTwoFactor } from './two-factor-gate.js';
import { billingCsp, consoleCsp, imageOriginSource, securityHeaders } from './headers.js';
import assetRoutes from './routes/assets.js';
import auditRoutes from './routes/audit.js';
import billingRoutes from './routes/billing.js';
import explorerRoutes from './routes/explorer.js';
import invitationRoutes from './routes/invitations.js';
import jobRoutes from './routes/jobs.js';
import keyRoutes from './routes/keys.js';
import overviewRoutes from './routes/overview.js';
import playgroundRoutes from './routes/playground.js';
import sessionRoutes from './routes/sessions.js';
import passwordResetRoutes from './routes/password-reset.js';
import secondFactorRoutes from './routes/second-factor.js';
import settingsRoutes from './routes/settings.js';
import signInRoutes from './routes/sign-in.js';
import signUpRoutes from './routes/sign-up.js';
import type { ConsoleServices } from './routes/types.js';
import teamRoutes from './routes/team.js';
import usageRoutes from './routes/usage.js';
import webhookRoutes from './routes/webhooks.js';

export type { ConsoleServices } from './routes/types.js';

export interface ConsoleOptions {
  config: Config;
  services: ConsoleServices;
  baseUrlOf: BaseUrlOf;
  /** Host name recorded in audit entries; default os.hostname(). */
  host?: string;
}

export async function registerConsole(app: FastifyInstance, opts: ConsoleOptions): Promise<void> {
  const { config, services: s, baseUrlOf } = opts;
  const host = opts.host ?? hostname();
  const csp = consoleCsp(config);

  await app.register(
    async function consoleScope(scope) {
      // Forms post urlencoded bodies; only here, so the APIs keep refusing them with 415.
      await scope.register(formbody, { bodyLimit: 64 * 1024 });
      scope.addHook('onSend', securityHeaders(csp));
      scope.addHook('preHandler', checkFormToken);
      scope.addHook('onRequest', requireTwoFactor);
      scope.setErrorHandler(consoleErrorHandler);
      scope.setNotFoundHandler(consoleNotFound);

      await scope.register(assetRoutes, {});
      await scope.register(signInRoutes, { signIn: s.signIn, sessions: s.sessions, signupOpen: config.SIGNUP === 'open' });
      // With SIGNUP=invite the sign-up page and its links do not exist (404).
      if (config.SIGNUP === 'open') await scope.register(signUpRoutes, { signUp: s.signUp, sessions: s.sessions, baseUrlOf });
      await scope.register(passwordResetRoutes, { passwords: s.passwords, baseUrlOf });
      await scope.register(secondFactorRoutes, { signIn: s.signIn, sessions: s.sessions });
      await scope.register(settingsRoutes, { passwords: s.passwords, twoFactor: s.twoFactor });
      await scope.register(overviewRoutes, { credits: s.credits, usage: s.usage, lowBalance: config.LOW_BALANCE_THRESHOLD, buyingEnabled: s.billing.buyingEnabled });
      await scope.register(keyRoutes, { keys: s.keys, host });
      await scope.register(usageRoutes, { usage: s.usage, keys: s.keys });
      await scope.register(auditRoutes, { audit: s.audit });
      await scope.register(jobRoutes, { jobs: s.jobs, baseUrlOf });
      await scope.register(playgroundRoutes, { definitions: s.definitions, jobs: s.jobs, jobWatch: s.jobWatch, credits: s.credits, baseUrlOf, csp });
      await scope.register(sessionRoutes, { sessions: s.sessions, signIn: s.signIn, host });
      await scope.register(webhookRoutes, { webhooks: s.webhooks, baseUrlOf });
      await scope.register(billingRoutes, { billing: s.billing, baseUrlOf, csp: billingCsp(config), host });
      await scope.register(teamRoutes, { team: s.team, invitations: s.invitations, sessions: s.sessions, host, baseUrlOf });
      await scope.register(invitationRoutes, { invitations: s.invitations, sessions: s.sessions, host });
      await scope.register(explorerRoutes, { tokens: s.clientTokens, imageOrigin: imageOriginSource(config) });
    },
    { prefix: '/console' },
  );
}
