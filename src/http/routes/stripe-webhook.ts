import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import type { PaymentEvent } from '../../domain/billing/ports.js';
import type { PurchaseFulfilment } from '../../domain/billing/fulfilment.js';
import { EDGE, errorResponses } from '../schemas/errors.js';
import type { RouteModule } from './types.js';

export interface StripeWebhookDeps {
  /** Null without STRIPE_WEBHOOK_SECRET (or STRIPE_SECRET_KEY): the route answers 404 payments_disabled. */
  stripe: {
    /** Checks `Stripe-Signature` over the raw bytes; throws invalid_stripe_signature. */
    verify: (rawBody: Buffer, signature: string | undefined) => PaymentEvent;
    fulfilment: Pick<PurchaseFulfilment, 'handle'>;
  } | null;
}

const received = z.object({
  received: z.literal(true),
  outcome: z
    .enum(['granted', 'already_granted', 'refunds_taken_back', 'mismatch', 'ignored'])
    .meta({ description: 'What the event did (`mismatch`: a paid Checkout whose amount or currency disagrees with the purchase sold; nothing granted).' }),
});

/**
 * Stripe's events (no API key: the signature is the authority). The body is kept as the exact bytes
 * Stripe signed: this route's scope parses every content type as a raw buffer, and no other route's.
 * A 2xx is sent only once the credits are durable; any failure is non-2xx, so Stripe delivers again.
 */
const stripeWebhookRoutes: RouteModule<StripeWebhookDeps> = async (app, { stripe }) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  const schema = {
    summary: 'Stripe webhook endpoint (Checkout payments, automatic recharges, refunds)',
    description:
      'Called by Stripe, not by API clients: verified by `Stripe-Signature` (300 s tolerance). Grants a paid Checkout Session or automatic recharge exactly once; `charge.refunded` takes back the refunded share. Other event types: 200, nothing done.',
    headers: z.looseObject({ 'stripe-signature': z.string().optional().meta({ description: "Stripe's `t=…,v1=…` signature of the raw body." }) }),
    body: z.unknown().meta({ description: 'A Stripe event (JSON), verified over its exact bytes.' }),
    response: { 200: received, ...errorResponses([...EDGE, 'invalid_stripe_signature', 'payments_disabled', 'purchase_not_recorded', 'payload_too_large', 'provider_failed', 'provider_unavailable']) },
  };
  app.post('/api/stripe/webhook', { schema }, async (request, reply) => {
    if (!stripe) throw new AppError('payments_disabled');
    const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const signature = request.headers['stripe-signature'];
    const event = stripe.verify(raw, typeof signature === 'string' ? signature : undefined);
    const outcome = await stripe.fulfilment.handle(event);
    if (outcome === 'mismatch') {
      const paid = event.kind === 'checkout_paid' ? { sessionId: event.payment.sessionId, accountId: event.payment.accountId, amount: event.payment.amount, currency: event.payment.currency } : event.kind === 'paid' ? { paymentIntentId: event.purchase.id, accountId: event.purchase.accountId, credits: event.purchase.credits, amount: event.purchase.amount, currency: event.purchase.currency } : {};
      request.log.warn(paid, 'stripe: payment mismatch: its amount, currency or account disagrees with the purchase sold; nothing granted');
    }
    return reply.header('cache-control', 'no-store').send({ received: true, outcome });
  });
};

export default stripeWebhookRoutes;
