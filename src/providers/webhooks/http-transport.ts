import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { HostResolver, SendOutcome, WebhookTransport } from '../../domain/webhooks/ports.js';

/** Every address a host name has (A and AAAA), as the system resolver answers. */
export const systemResolver: HostResolver = async (host) => (await dnsLookup(host, { all: true, verbatim: true })).map((a) => a.address);

/**
 * POSTs with node:http(s). The socket connects to the address given, whatever the host name resolves
 * to by then: `lookup` answers with it, so a DNS change after the check (rebinding) cannot move the
 * request to another address. TLS still verifies the certificate for the URL's host name (SNI), and
 * the Host header is the URL's. Redirects are not followed (a 3xx is an answer like any other).
 */
export const httpTransport: WebhookTransport = {
  post(url: URL, address: string, headers: Record<string, string>, body: string, timeoutMs: number): Promise<SendOutcome> {
    const family = isIP(address);
    const pinned: LookupFunction = (_host, options, callback) => {
      if ((options as { all?: boolean }).all) (callback as (err: null, addresses: { address: string; family: number }[]) => void)(null, [{ address, family }]);
      else callback(null, address, family);
    };
    const client = url.protocol === 'https:' ? https : http;
    return new Promise<SendOutcome>((resolve) => {
      const request = client.request(
        url,
        {
          method: 'POST',
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          lookup: pinned,
          // No pooling: each attempt opens its own connection to the address it checked.
          agent: false,
          signal: AbortSignal.timeout(timeoutMs),
        },
        (response) => {
          // The answer is the status line; the body is read (bounded by the timeout) and dropped.
          response.resume();
          response.once('end', () => resolve({ kind: 'answered', statusCode: response.statusCode ?? 0 }));
          response.once('error', () => resolve({ kind: 'answered', statusCode: response.statusCode ?? 0 }));
        },
      );
      request.once('error', (err: NodeJS.ErrnoException) => {
        const timedOut = err.name === 'AbortError' || err.name === 'TimeoutError';
        resolve({ kind: 'error', error: timedOut ? `no answer within ${timeoutMs / 1000} s` : (err.code ?? err.message).slice(0, 200) });
      });
      request.end(body);
    });
  },
};
