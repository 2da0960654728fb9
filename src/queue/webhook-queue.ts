import type { Agenda } from 'agenda';
import type { Db } from 'mongodb';
import { z } from 'zod';
import type { DeliveryQueue } from '../domain/webhooks/ports.js';
import { currentTraceparent } from '../tracing/context.js';
import { QUEUE_COLLECTION, traceparentField } from './image-queue.js';

/** One queue entry per delivery attempt (the delivery document says which attempt is due). */
export const DELIVER_WEBHOOK = 'webhook.deliver';
/** Periodic repair: events written but not published, deliveries due without a queue entry. */
export const SWEEP_WEBHOOKS = 'webhooks.sweep';

export const deliverWebhookPayload = z.object({ deliveryId: z.string().regex(/^dlv_[\w-]{10,64}$/), traceparent: traceparentField });
export type DeliverWebhookPayload = z.infer<typeof deliverWebhookPayload>;

/** Deliveries on the process's one Agenda instance (the image queue's), so an enqueue wakes a local worker. */
export class WebhookQueue implements DeliveryQueue {
  constructor(
    private readonly agenda: Agenda,
    private readonly db: Db,
  ) {}

  static async open(agenda: Agenda, db: Db): Promise<WebhookQueue> {
    // The sweep looks up a delivery's entries by id.
    await db.collection(QUEUE_COLLECTION).createIndex({ 'data.deliveryId': 1 }, { name: 'webhookDeliveryId', sparse: true });
    return new WebhookQueue(agenda, db);
  }

  async enqueue(deliveryId: string, at?: Date): Promise<void> {
    // The event's trace (a job's create request, through its worker) goes on into the delivery.
    const traceparent = currentTraceparent();
    const data = traceparent ? { deliveryId, traceparent } : { deliveryId };
    if (at && at.getTime() > Date.now()) await this.agenda.schedule<DeliverWebhookPayload>(at, DELIVER_WEBHOOK, data);
    else await this.agenda.now<DeliverWebhookPayload>(DELIVER_WEBHOOK, data);
  }

  async queued(deliveryIds: readonly string[]): Promise<Set<string>> {
    const docs = await this.db
      .collection(QUEUE_COLLECTION)
      .find(
        { name: DELIVER_WEBHOOK, 'data.deliveryId': { $in: [...deliveryIds] }, $or: [{ nextRunAt: { $ne: null } }, { lockedAt: { $ne: null } }] },
        { projection: { 'data.deliveryId': 1 } },
      )
      .toArray();
    return new Set(docs.map((d) => (d.data as { deliveryId: string }).deliveryId));
  }
}
