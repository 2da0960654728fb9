import { describe, expect, it } from 'vitest';
import { createKeyServices } from '../../src/domain/keys/index.js';
import type { KeyGrant } from '../../src/domain/principal.js';
import { until } from '../helpers/until.js';
import { ManualKeyFeed, MemoryAccountStore, MemoryAuditStore, MemoryKeyStore, MemoryRateLimitCounter } from '../gateway/memory-fakes.js';

/**
 * A key's grant after a change of its settings reaches the grant listeners (open subscriptions are held
 * to it), whether the change was made here or reported by the change feed.
 */
const actor = { actor: 'test', ip: '1.2.3.4', host: 'h' };

async function setup() {
  const feed = new ManualKeyFeed();
  const accounts = new MemoryAccountStore();
  const keys = new MemoryKeyStore();
  const k = createKeyServices({ keys, accounts, audit: new MemoryAuditStore(), changes: feed, rateLimits: new MemoryRateLimitCounter() });
  const acc = await accounts.create('a', 10, new Date());
  const created = await k.manager.create(acc.id, 'k', actor);
  const heard: { keyId: string; grant: KeyGrant }[] = [];
  k.authenticator.onGrantChanged((keyId, grant) => heard.push({ keyId, grant }));
  /** Another instance's edit: the stored key changes, with a new settings version. */
  const editElsewhere = (permissions: KeyGrant['permissions']) => {
    const stored = keys.keys.get(created.id)!;
    stored.permissions = [...permissions];
    stored.updatedAt = new Date(stored.updatedAt!.getTime() + 1000);
    return stored.updatedAt.getTime();
  };
  return { feed, keys, k, created, heard, editElsewhere, header: `Bearer ${created.key}` };
}

describe('grant changes', () => {
  it('a change reported by the feed is announced with the grant as read after it', async () => {
    const { feed, created, heard, editElsewhere } = await setup();
    const version = editElsewhere(['lookup']);
    feed.change(created.id, false, version);
    await until(() => heard.length > 0, 'the grant is announced');
    expect(heard).toEqual([{ keyId: created.id, grant: expect.objectContaining({ permissions: ['lookup'] }) }]);
  });

  it('a local edit is announced at once, without waiting for its change event', async () => {
    const { k, created, heard } = await setup();
    await k.manager.update(created.id, { permissions: ['generate', 'read'] }, actor);
    await until(() => heard.length > 0, 'the grant is announced');
    expect(heard.at(-1)).toEqual({ keyId: created.id, grant: expect.objectContaining({ permissions: ['generate', 'read'] }) });
  });

  it('a change whose event a request overtook (the key cached at the event’s version) is still announced', async () => {
    const { feed, k, created, heard, editElsewhere, header } = await setup();
    const version = editElsewhere(['lookup']);
    // A request reads the changed key before the change's event arrives, and caches it.
    expect((await k.authenticator.authenticate(header)).permissions).toEqual(['lookup']);
    expect(k.verifier.cachedKeys).toBe(1);
    feed.change(created.id, false, version);
    expect(heard).toEqual([{ keyId: created.id, grant: expect.objectContaining({ permissions: ['lookup'] }) }]);
    // Nothing to evict: the cache already holds that version.
    expect(k.verifier.cachedKeys).toBe(1);
  });

  it('a deletion is a revocation, not a grant change', async () => {
    const { feed, keys, created, heard, k } = await setup();
    const revoked: string[] = [];
    k.authenticator.onRevoked((id) => revoked.push(id));
    keys.keys.get(created.id)!.deletedAt = new Date();
    feed.change(created.id, true);
    expect(revoked).toEqual([created.id]);
    expect(heard).toEqual([]);
  });
});
