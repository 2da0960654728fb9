import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { AppError } from '../../src/domain/errors.js';
import type { KeyPermission } from '../../src/domain/keys/permissions.js';
import type { RevocationReason } from '../../src/domain/keys/revocations.js';
import type { KeyGrant, Principal } from '../../src/domain/principal.js';
import type { Credentials } from '../../src/edge/credentials.js';
import { SocketCallers } from '../../src/edge/sockets.js';
import { until } from '../helpers/until.js';

/**
 * A connection's subscriptions are held to their key's permissions as the key changes: what the key
 * may no longer run ends alone (403 key_permission), the connection and the rest stay.
 */
const KEY_ID = 'a'.repeat(24);
const OTHER_KEY_ID = 'b'.repeat(24);
const EVERY: KeyPermission[] = ['lookup', 'generate', 'read', 'client_tokens', 'webhooks'];

function grant(permissions: KeyPermission[]): KeyGrant {
  return { permissions, rateLimitPerMinute: null, creditLimit: null };
}

async function connected() {
  const revokedListeners = new Set<(keyId: string, reason: RevocationReason) => void>();
  const grantListeners = new Set<(keyId: string, grant: KeyGrant) => void>();
  const principal: Principal = { accountId: 'c'.repeat(24), keyId: KEY_ID, permissions: EVERY };
  const credentials: Credentials = {
    apiKey: () => Promise.reject(new Error('not used')),
    graphql: async () => ({ principal, rateLimit: null }),
    count: async () => null,
    onRevoked: (l) => (revokedListeners.add(l), () => void revokedListeners.delete(l)),
    onGrantChanged: (l) => (grantListeners.add(l), () => void grantListeners.delete(l)),
  };
  const closes: number[] = [];
  const socket = { close: (code: number) => void closes.push(code), once: () => undefined } as unknown as WebSocket;
  const callers = new SocketCallers({ credentials, databaseDown: () => false, log: { error: () => undefined }, maxSubscriptions: 10 });
  const caller = (await callers.connect(socket, { Authorization: 'Bearer x' }, { headers: {} } as IncomingMessage))!;
  return {
    caller,
    closes,
    changed: (keyId: string, permissions: KeyPermission[]) => grantListeners.forEach((l) => l(keyId, grant(permissions))),
    revoked: (keyId: string, reason: RevocationReason) => revokedListeners.forEach((l) => l(keyId, reason)),
  };
}

const keyPermission = expect.objectContaining({ code: 'key_permission' });

describe('subscriptions held to their key’s permissions', () => {
  it('a change that takes read ends the subscriptions needing it, alone: the others and the connection stay', async () => {
    const { caller, closes, changed } = await connected();
    const reading = caller.guard(['read']);
    const looking = caller.guard(['lookup']);
    changed(KEY_ID, ['lookup', 'generate']);
    expect(reading.signal.aborted).toBe(true);
    expect(reading.signal.reason).toBeInstanceOf(AppError);
    expect(reading.signal.reason).toEqual(keyPermission);
    expect(looking.signal.aborted).toBe(false);
    expect(caller.signal.aborted).toBe(false);
    expect(closes).toEqual([]);
  });

  it('a change that keeps what a subscription needs, or another key’s change, ends nothing', async () => {
    const { caller, changed } = await connected();
    const reading = caller.guard(['read']);
    changed(KEY_ID, ['read']);
    changed(OTHER_KEY_ID, []);
    expect(reading.signal.aborted).toBe(false);
  });

  it('a subscription admitted after a change was announced that takes its permission starts ended', async () => {
    const { caller, changed } = await connected();
    changed(KEY_ID, ['lookup']);
    expect(caller.guard(['read']).signal.reason).toEqual(keyPermission);
    expect(caller.guard(['lookup']).signal.aborted).toBe(false);
    // The permission given back: subscriptions needing it are admitted again.
    changed(KEY_ID, ['lookup', 'read']);
    expect(caller.guard(['read']).signal.aborted).toBe(false);
  });

  it('a released subscription is no longer held; the connection’s ending ends the rest with its reason', async () => {
    const { caller, closes, changed, revoked } = await connected();
    const done = caller.guard(['read']);
    done.release();
    changed(KEY_ID, ['lookup']);
    expect(done.signal.aborted).toBe(false);
    const open = caller.guard(['lookup']);
    revoked(KEY_ID, 'expired');
    expect(open.signal.reason).toEqual(expect.objectContaining({ code: 'api_key_expired' }));
    expect(caller.signal.aborted).toBe(true);
    await until(() => closes.length > 0, 'the socket closes');
    expect(closes).toEqual([4401]);
  });
});
