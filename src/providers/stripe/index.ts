/**
 * Stripe through its official SDK: the PaymentProvider the billing domain calls, and the webhook
 * verification of the `POST /api/stripe/webhook` door. STRIPE_API_BASE points the SDK elsewhere (the
 * tests' stand-in); nothing else here knows about tests.
 */
import Stripe from 'stripe';
import { AppError } from '../../domain/errors.js';
import type { PaymentEvent, PaymentProvider } from '../../domain/billing/ports.js';
import type { PaidPurchase } from '../../domain/billing/types.js';

/** Stripe's own tolerance for a signature's timestamp. */
export const SIGNATURE_TOLERANCE_SECONDS = 300;

export interface StripeSettings {
  secretKey: string;
  /** STRIPE_API_BASE: `http(s)://host:port`. */
  apiBase?: string;
}

export function stripeClient(settings: StripeSettings): Stripe {
  const base = settings.apiBase ? new URL(settings.apiBase) : null;
  return new Stripe(settings.secretKey, {
    maxNetworkRetries: 2,
    timeout: 30_000,
    ...(base
      ? { host: base.hostname, port: base.port || (base.protocol === 'https:' ? 443 : 80), protocol: base.protocol === 'https:' ? 'https' : 'http' }
      : {}),
  });
}

export class StripePayments implements PaymentProvider {
  constructor(private readonly stripe: Stripe) {}

  async createCustomer(input: { accountId: string; name: string }, idempotencyKey: string): Promise<string> {
    const customer = await this.call(() => this.stripe.customers.create({ name: input.name, metadata: { account_id: input.accountId } }, { idempotencyKey }));
    return customer.id;
  }

  async createCheckoutSession(input: Parameters<PaymentProvider['createCheckoutSession']>[0]): Promise<{ id: string; url: string }> {
    const metadata = { account_id: input.accountId, credits: String(input.credits) };
    const session = await this.call(() =>
      this.stripe.checkout.sessions.create({
        mode: 'payment',
        customer: input.customerId,
        client_reference_id: input.accountId,
        metadata,
        line_items: [{ quantity: 1, price_data: { currency: input.currency, unit_amount: input.amount, product_data: { name: `${input.credits} credits` } } }],
        // The card is kept on the customer for automatic recharge; the metadata lets a refund find its account.
        payment_intent_data: { setup_future_usage: 'off_session', metadata },
        success_url: input.successUrl,
        cancel_url: input.cancelUrl,
      }),
    );
    if (!session.url) throw new AppError('provider_failed', { message: 'Stripe returned a Checkout Session without a URL' });
    return { id: session.id, url: session.url };
  }

  async chargeSavedCard(input: Parameters<PaymentProvider['chargeSavedCard']>[0]) {
    const methods = await this.call(() => this.stripe.customers.listPaymentMethods(input.customerId, { type: 'card', limit: 1 }));
    const card = methods.data[0];
    if (!card) return { ok: false as const, reason: 'no saved card', paymentIntentId: null };
    try {
      const intent = await this.stripe.paymentIntents.create(
        {
          amount: input.amount,
          currency: input.currency,
          customer: input.customerId,
          payment_method: card.id,
          off_session: true,
          confirm: true,
          metadata: { account_id: input.accountId, credits: String(input.credits), purpose: 'auto_recharge', trigger_id: input.triggerId },
        },
        { idempotencyKey: input.triggerId },
      );
      if (intent.status === 'succeeded') return { ok: true as const, paymentIntentId: intent.id };
      return { ok: false as const, reason: `payment ${intent.status.replace(/_/g, ' ')}`, paymentIntentId: intent.id };
    } catch (err) {
      // A decline (card_error) is an answer; anything else is a fault the queue retries.
      if (err instanceof Stripe.errors.StripeCardError) {
        const pi = (err.raw as { payment_intent?: { id?: string } } | undefined)?.payment_intent?.id ?? null;
        return { ok: false as const, reason: err.decline_code ?? err.code ?? err.message, paymentIntentId: pi };
      }
      throw toAppError(err);
    }
  }

  async refundsOf(chargeId: string): Promise<{ id: string; amount: number; created: number }[]> {
    const refunds = await this.call(() => this.stripe.refunds.list({ charge: chargeId, limit: 100 }));
    return refunds.data.filter((r) => r.status !== 'failed' && r.status !== 'canceled').map((r) => ({ id: r.id, amount: r.amount, created: r.created }));
  }

  async accountOfPaymentIntent(paymentIntentId: string): Promise<string | null> {
    try {
      const intent = await this.stripe.paymentIntents.retrieve(paymentIntentId);
      return intent.metadata?.account_id ?? null;
    } catch (err) {
      if (err instanceof Stripe.errors.StripeInvalidRequestError && err.statusCode === 404) return null;
      throw toAppError(err);
    }
  }

  private async call<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw toAppError(err);
    }
  }
}

/** Stripe's failures as the catalog's: the gateway's caller (a person, Stripe's retry) may try again. */
function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof Stripe.errors.StripeConnectionError || err instanceof Stripe.errors.StripeRateLimitError) return new AppError('provider_unavailable', { cause: err });
  return new AppError('provider_failed', { cause: err });
}

/**
 * Verifies `Stripe-Signature` over the exact bytes received (300 s tolerance) and reads the event the
 * billing domain acts on. Throws `invalid_stripe_signature` for a missing, wrong or stale signature.
 */
export function stripeEventVerifier(stripe: Stripe, webhookSecret: string) {
  return (rawBody: Buffer, signature: string | undefined): PaymentEvent => {
    if (!signature) throw new AppError('invalid_stripe_signature');
    let event: Stripe.Event;
    try {
      event = stripe.webhooks.constructEvent(rawBody, signature, webhookSecret, SIGNATURE_TOLERANCE_SECONDS);
    } catch (err) {
      throw new AppError('invalid_stripe_signature', { cause: err });
    }
    return toPaymentEvent(event);
  };
}

const PAID_SESSION_EVENTS = new Set(['checkout.session.completed', 'checkout.session.async_payment_succeeded']);

/** The events that move credits, read into the domain's shapes; everything else is `ignored`. */
export function toPaymentEvent(event: Stripe.Event): PaymentEvent {
  const ignored = { kind: 'ignored' as const, type: event.type };
  if (PAID_SESSION_EVENTS.has(event.type)) {
    const session = event.data.object as Stripe.Checkout.Session;
    if (session.payment_status !== 'paid' || session.mode !== 'payment') return ignored;
    // No credits read here: the purchase the gateway recorded with the session says what was bought.
    return {
      kind: 'checkout_paid',
      payment: {
        sessionId: session.id,
        accountId: session.metadata?.account_id ?? session.client_reference_id ?? null,
        amount: session.amount_total ?? null,
        currency: session.currency?.toLowerCase() ?? null,
        paymentIntentId: idOf(session.payment_intent),
      },
    };
  }
  if (event.type === 'payment_intent.succeeded') {
    const intent = event.data.object;
    // A Checkout payment's own PaymentIntent also succeeds: only automatic recharges grant this way.
    if (intent.metadata?.purpose !== 'auto_recharge') return ignored;
    const purchase = purchaseOf(intent.metadata, { id: intent.id, kind: 'auto_recharge', amount: intent.amount_received || intent.amount, currency: intent.currency, paymentIntentId: intent.id });
    return purchase ? { kind: 'paid', purchase: { ...purchase, triggerId: intent.metadata.trigger_id ?? null } } : ignored;
  }
  if (event.type === 'charge.refunded') {
    const charge = event.data.object;
    const paymentIntentId = idOf(charge.payment_intent);
    return paymentIntentId ? { kind: 'refunded', chargeId: charge.id, paymentIntentId } : ignored;
  }
  return ignored;
}

function purchaseOf(
  metadata: Stripe.Metadata | null | undefined,
  base: { id: string; kind: PaidPurchase['kind']; amount: number | null; currency: string | null; paymentIntentId: string | null },
): PaidPurchase | null {
  const accountId = metadata?.account_id;
  const credits = Number(metadata?.credits);
  if (!accountId || !Number.isSafeInteger(credits) || credits <= 0 || base.amount === null || !base.currency) return null;
  return { id: base.id, kind: base.kind, accountId, credits, amount: base.amount, currency: base.currency, paymentIntentId: base.paymentIntentId };
}

function idOf(ref: string | { id: string } | null | undefined): string | null {
  return typeof ref === 'string' ? ref : (ref?.id ?? null);
}
