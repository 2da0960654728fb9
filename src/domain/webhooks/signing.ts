import { createHash, createHmac, randomBytes } from 'node:crypto';

/** Standard Webhooks secrets: `whsec_` + base64 of the key (32 random bytes). */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** `webhook-signature` v1: base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed by the decoded secret. */
export function signature(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/** The three Standard Webhooks headers of one attempt. */
export function signedHeaders(secret: string, eventId: string, at: Date, body: string): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature(secret, eventId, timestamp, body),
  };
}

/** An event id derived from what caused it, so publishing it twice (a crash, the sweep) yields one id. */
export function derivedEventId(cause: string): string {
  return `msg_${createHash('sha256').update(cause).digest('base64url').slice(0, 27)}`;
}

/** Id of the delivery of one event to one endpoint (the same on a second publish). */
export function deliveryIdOf(eventId: string, endpointId: string): string {
  return `dlv_${createHash('sha256').update(`${eventId}:${endpointId}`).digest('base64url').slice(0, 27)}`;
}

/** Id of a resend: a new delivery of the same event. */
export function resendId(): string {
  return `dlv_${randomBytes(20).toString('base64url')}`;
}
