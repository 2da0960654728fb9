import { randomBytes } from 'node:crypto';
import { AppError, invalid } from '../errors.js';
import type { DeliveryQueue, DeliveryRecord, DeliveryStore, EndpointRecord, EndpointStore, HostResolver, LowCreditsState, LowCreditsStore } from './ports.js';
import { resendId } from './signing.js';
import { newSecret } from './signing.js';
import { WEBHOOK_EVENT_TYPES, isWebhookEventType, type DeliveryView, type EndpointCreated, type EndpointView, type WebhookEventType } from './types.js';
import { allowedAddresses, parseWebhookUrl } from './url-policy.js';

export interface WebhookEndpointsDeps {
  endpoints: EndpointStore;
  deliveries: DeliveryStore;
  queue: DeliveryQueue;
  lowCredits: LowCreditsStore;
  resolve: HostResolver;
  /** WEBHOOK_ALLOW_PRIVATE_URLS: development and tests only. */
  allowPrivate: boolean;
  /** Endpoints per account. */
  maxEndpoints?: number;
  now?: () => Date;
}

export const MAX_ENDPOINTS = 20;
export const MAX_LOW_CREDITS_THRESHOLD = 1_000_000_000;

/** Managing webhook endpoints and their deliveries: the one place their rules live for REST and the console. */
export class WebhookEndpoints {
  private readonly now: () => Date;

  constructor(private readonly deps: WebhookEndpointsDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /** Validates `input` ({url, events?}), checks where the URL leads, stores the endpoint with a new secret. */
  async create(accountId: string, input: unknown, baseUrl: string): Promise<EndpointCreated> {
    if (input === null || typeof input !== 'object' || Array.isArray(input)) throw invalid('body', 'body must be a JSON object with url and events');
    const body = input as { url?: unknown; events?: unknown };
    const url = parseWebhookUrl(body.url);
    const events = parseEvents(body.events);
    await allowedAddresses(url, this.deps.resolve, this.deps.allowPrivate);
    const existing = await this.deps.endpoints.listForAccount(accountId);
    const max = this.deps.maxEndpoints ?? MAX_ENDPOINTS;
    if (existing.length >= max) throw invalid('url', `an account may register at most ${max} webhook endpoints`);
    const endpoint: EndpointRecord = {
      id: `ep_${randomBytes(12).toString('hex')}`,
      accountId,
      url: url.href,
      events,
      secret: newSecret(),
      baseUrl,
      createdAt: this.now(),
      disabledAt: null,
    };
    await this.deps.endpoints.insert(endpoint);
    return { id: endpoint.id, url: endpoint.url, events: endpoint.events, secret: endpoint.secret, createdAt: endpoint.createdAt };
  }

  async list(accountId: string): Promise<EndpointView[]> {
    return (await this.deps.endpoints.listForAccount(accountId)).map(toEndpointView);
  }

  /** 404 webhook_not_found for an unknown id or another account's endpoint. */
  async delete(accountId: string, id: unknown): Promise<void> {
    if (typeof id !== 'string' || !(await this.deps.endpoints.delete(accountId, id))) throw new AppError('webhook_not_found');
  }

  async recentDeliveries(accountId: string, limit = 50): Promise<DeliveryView[]> {
    return (await this.deps.deliveries.recent(accountId, limit)).map(toDeliveryView);
  }

  /** A new delivery of the same event (same `webhook-id` and body) to the same endpoint, sent now. */
  async resend(accountId: string, deliveryId: unknown): Promise<DeliveryView> {
    const original = typeof deliveryId === 'string' ? await this.deps.deliveries.find(deliveryId) : null;
    if (!original || original.accountId !== accountId) throw new AppError('webhook_not_found');
    const endpoint = await this.deps.endpoints.find(original.endpointId);
    if (!endpoint || endpoint.accountId !== accountId) throw new AppError('webhook_not_found');
    const now = this.now();
    const copy: DeliveryRecord = { ...original, id: resendId(), status: 'pending', attempts: [], createdAt: now, nextAttemptAt: now, lockedUntil: null };
    await this.deps.deliveries.insertOnce(copy);
    await this.deps.queue.enqueue(copy.id);
    return toDeliveryView(copy);
  }

  lowCreditsState(accountId: string): Promise<LowCreditsState | null> {
    return this.deps.lowCredits.state(accountId);
  }

  /** Sets the `credits.low` threshold (a whole number of credits). */
  async setLowCreditsThreshold(accountId: string, value: unknown): Promise<LowCreditsState> {
    const threshold = typeof value === 'string' && /^\s*\d+\s*$/.test(value) ? Number(value) : value;
    if (typeof threshold !== 'number' || !Number.isSafeInteger(threshold) || threshold < 0 || threshold > MAX_LOW_CREDITS_THRESHOLD) {
      throw invalid('threshold', `threshold must be a whole number between 0 and ${MAX_LOW_CREDITS_THRESHOLD}`);
    }
    const state = await this.deps.lowCredits.setThreshold(accountId, threshold);
    if (!state) throw invalid('account', 'account does not exist');
    return state;
  }
}

function parseEvents(value: unknown): WebhookEventType[] {
  if (value === undefined || value === null) return [...WEBHOOK_EVENT_TYPES];
  if (!Array.isArray(value) || value.length === 0) throw invalid('events', `events must be a non-empty array of: ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  for (const e of value) {
    if (!isWebhookEventType(e)) throw invalid('events', `events has an unknown event ${JSON.stringify(e)}; known: ${WEBHOOK_EVENT_TYPES.join(', ')}`);
  }
  // In the catalog's order, once each.
  return WEBHOOK_EVENT_TYPES.filter((t) => (value as unknown[]).includes(t));
}

function toEndpointView(e: EndpointRecord): EndpointView {
  return { id: e.id, url: e.url, events: e.events, createdAt: e.createdAt, disabledAt: e.disabledAt };
}

export function toDeliveryView(d: DeliveryRecord): DeliveryView {
  return {
    id: d.id,
    eventId: d.eventId,
    endpointId: d.endpointId,
    type: d.type,
    status: d.status,
    createdAt: d.createdAt,
    attempts: d.attempts,
    nextAttemptAt: d.nextAttemptAt,
  };
}
