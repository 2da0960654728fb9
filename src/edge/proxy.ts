/**
 * Which hops in front of the gateway are trusted to say who the client is (X-Forwarded-For) and how
 * it called (X-Forwarded-Proto): Fastify's `trustProxy`, from TRUST_PROXY.
 */
import type { Config } from '../config.js';

type TrustProxy = false | string[] | ((address: string, hop: number) => boolean);

export function trustProxyOption(setting: Config['TRUST_PROXY']): TrustProxy {
  if (typeof setting !== 'number') return setting;
  // A hop count as Express means it: the socket's peer is hop 0, the right-most X-Forwarded-For entry
  // hop 1, and so on; the client is the first hop past the count. (Fastify's own numeric trustProxy
  // trusts no hop at all, so it would not read X-Forwarded-For.)
  return (_address, hop) => hop < setting;
}
