/**
 * A webhook receiver for tests: an HTTP server on 127.0.0.1 that verifies every delivery with the
 * `standardwebhooks` package (the reference implementation) and records it. `answer` decides the
 * status code of each request (default 204).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  id: string;
  timestamp: string;
  /** Parsed body; null when the signature did not verify. */
  body: { type: string; timestamp: string; data: any } | null;
  verified: boolean;
  error?: string;
  receivedAt: number;
  statusCode: number;
  headers: http.IncomingHttpHeaders;
}

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** The endpoint's secret, once registered: every later delivery is verified with it. */
  secret: string | undefined;
  answer: (r: Omit<Received, 'statusCode'>, n: number) => number;
  close(): Promise<void>;
}

export async function startReceiver(opts: { port?: number; path?: string } = {}): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    port: 0,
    received: [],
    secret: undefined,
    answer: () => 204,
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const payload = Buffer.concat(chunks).toString('utf8');
      const headers = {
        'webhook-id': String(req.headers['webhook-id'] ?? ''),
        'webhook-timestamp': String(req.headers['webhook-timestamp'] ?? ''),
        'webhook-signature': String(req.headers['webhook-signature'] ?? ''),
      };
      let body: Received['body'] = null;
      let error: string | undefined;
      try {
        if (!receiver.secret) throw new Error('no secret yet');
        body = new Webhook(receiver.secret).verify(payload, headers) as Received['body'];
      } catch (err) {
        error = (err as Error).message;
      }
      const base = { id: headers['webhook-id'], timestamp: headers['webhook-timestamp'], body, verified: body !== null, error, receivedAt: Date.now(), headers: req.headers };
      const statusCode = receiver.answer(base, receiver.received.length);
      receiver.received.push({ ...base, statusCode });
      res.writeHead(statusCode).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  receiver.port = (server.address() as AddressInfo).port;
  receiver.url = `http://127.0.0.1:${receiver.port}${opts.path ?? '/hooks'}`;
  receiver.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}
