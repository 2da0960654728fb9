import type { Config } from '../../config.js';
import { AppError } from '../../domain/errors.js';

/** One connection's open subscriptions, as the caps count them. */
export interface CappedConnection {
  keyId: string;
  subscriptions: Set<string>;
}

/**
 * Open subscriptions per WebSocket and per API key on this instance (each holds a job watch and a
 * slot in the fan-out; a key's client tokens count against it). Over a cap, the subscribe is refused
 * (RATE_LIMITED); the socket stays open.
 */
export function subscriptionCaps(config: Pick<Config, 'GRAPHQL_MAX_SUBSCRIPTIONS_PER_SOCKET' | 'GRAPHQL_MAX_SUBSCRIPTIONS_PER_KEY'>) {
  const perKey = new Map<string, number>();
  return {
    /** Checked and taken with no await in between: concurrent subscribes cannot both pass. */
    take(conn: CappedConnection, id: string): AppError | undefined {
      const forKey = perKey.get(conn.keyId) ?? 0;
      if (conn.subscriptions.size >= config.GRAPHQL_MAX_SUBSCRIPTIONS_PER_SOCKET) {
        return new AppError('too_many_subscriptions', { message: `Too many open subscriptions on this connection (at most ${config.GRAPHQL_MAX_SUBSCRIPTIONS_PER_SOCKET})` });
      }
      if (forKey >= config.GRAPHQL_MAX_SUBSCRIPTIONS_PER_KEY) {
        return new AppError('too_many_subscriptions', { message: `Too many open subscriptions for this API key (at most ${config.GRAPHQL_MAX_SUBSCRIPTIONS_PER_KEY})` });
      }
      conn.subscriptions.add(id);
      perKey.set(conn.keyId, forKey + 1);
      return undefined;
    },
    release(conn: CappedConnection, id: string): void {
      if (!conn.subscriptions.delete(id)) return;
      const left = (perKey.get(conn.keyId) ?? 1) - 1;
      if (left > 0) perKey.set(conn.keyId, left);
      else perKey.delete(conn.keyId);
    },
  };
}
