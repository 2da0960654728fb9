import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BillingService } from '../../domain/billing/service.js';
import { isAppError } from '../../domain/errors.js';
import type { BaseUrlOf } from '../../http/routes/types.js';
import { actorOf, callerOf, pageContext, wantsJson } from '../context.js';
import { sendHtml } from '../render.js';
import { billingPage, type BillingPageData } from '../views/billing.js';
import { needs, type ConsoleRoute } from './types.js';

/** The Billing page is for owners and admins: one check, the role table's (the edge refuses others with 403). */
const BILLING = needs('billing.manage');

export interface BillingRouteDeps {
  billing: Pick<BillingService, 'overview' | 'startCheckout' | 'saveAutoRecharge'>;
  baseUrlOf: BaseUrlOf;
  /** The Billing page's CSP: the console's, with Checkout's origin allowed as a form target. */
  csp: string;
  host: string;
}

type Form = { pack?: unknown; enabled?: unknown; threshold?: unknown };

/** Billing: balance, packs (each a Stripe Checkout), purchase history, automatic recharge settings. */
const billingRoutes: ConsoleRoute<BillingRouteDeps> = async (app, deps) => {
  const { billing } = deps;
  const accountOf = (request: FastifyRequest) => callerOf(request).principal.accountId;
  const render = async (request: FastifyRequest, reply: FastifyReply, extra: Partial<BillingPageData> = {}) => {
    const overview = await billing.overview(accountOf(request));
    return sendHtml(reply.header('content-security-policy', deps.csp), billingPage(pageContext(request, '/console/billing'), { ...overview, ...extra }));
  };

  app.get<{ Querystring: { checkout?: string; saved?: string } }>('/billing', BILLING, async (request, reply) => {
    const { checkout, saved } = request.query ?? {};
    return render(request, reply, { checkout: checkout === 'success' || checkout === 'canceled' ? checkout : undefined, saved: saved === '1' });
  });

  app.post<{ Body: Form }>('/billing/checkout', BILLING, async (request, reply) => {
    const accountId = accountOf(request);
    const back = `${deps.baseUrlOf(request)}/console/billing`;
    try {
      const url = await billing.startCheckout(accountId, request.body?.pack, { successUrl: `${back}?checkout=success`, cancelUrl: `${back}?checkout=canceled` });
      if (wantsJson(request)) return reply.send({ url });
      return reply.code(303).header('location', url).send();
    } catch (err) {
      if (!isAppError(err) || wantsJson(request) || !['invalid_request', 'provider_failed', 'provider_unavailable'].includes(err.code)) throw err;
      return render(request, reply.code(err.httpStatus), { error: err.message });
    }
  });

  app.post<{ Body: Form }>('/billing/auto-recharge', BILLING, async (request, reply) => {
    const accountId = accountOf(request);
    const input = { enabled: request.body?.enabled, threshold: request.body?.threshold, credits: request.body?.pack };
    try {
      const settings = await billing.saveAutoRecharge(accountId, input, actorOf(request, deps.host));
      if (wantsJson(request)) return reply.send(settings);
      return reply.code(303).header('location', '/console/billing?saved=1').send();
    } catch (err) {
      if (!isAppError(err) || wantsJson(request) || err.code !== 'invalid_request') throw err;
      return render(request, reply.code(400), { error: err.message });
    }
  });
};

export default billingRoutes;
