/**
 * A bare HTTP/1.1 client over a `net` socket, for what fetch cannot do: send malformed or partial
 * requests, keep a connection open on purpose, and see the exact bytes and headers the server sends.
 */
import net from 'node:net';

export interface RawResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: string;
  /** The status line and headers as sent. */
  head: string;
}

export class RawClient {
  private buffer = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  /** The server ended or reset the connection. */
  ended = false;
  readonly closed: Promise<void>;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake();
    });
    // A reset is an end too: what was read stays readable.
    socket.on('error', () => undefined);
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.ended = true;
        this.wake();
        resolve();
      }),
    );
  }

  static connect(port: number, host = '127.0.0.1'): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ port, host }, () => resolve(new RawClient(socket)));
      socket.once('error', reject);
    });
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** The next complete response: by Content-Length, chunked, or up to the end of the connection. */
  async response(): Promise<RawResponse> {
    for (;;) {
      const parsed = parseResponse(this.buffer, this.ended);
      if (parsed) {
        this.buffer = this.buffer.subarray(parsed.consumed);
        return parsed.response;
      }
      if (this.ended) throw new Error(`connection ended without a complete response; got ${JSON.stringify(this.buffer.toString('latin1'))}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  destroy(): void {
    this.socket.destroy();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

function parseResponse(buf: Buffer, ended: boolean): { response: RawResponse; consumed: number } | undefined {
  const headEnd = buf.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const head = buf.subarray(0, headEnd).toString('latin1');
  const [statusLine, ...lines] = head.split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine!)?.[1]);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    const name = line.slice(0, i).trim().toLowerCase();
    const value = line.slice(i + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const start = headEnd + 4;
  if (headers['content-length'] !== undefined) {
    const end = start + Number(headers['content-length']);
    if (buf.length < end) return undefined;
    return { response: { status, headers, head, body: buf.subarray(start, end).toString('utf8') }, consumed: end };
  }
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    let at = start;
    const parts: Buffer[] = [];
    for (;;) {
      const lineEnd = buf.indexOf('\r\n', at);
      if (lineEnd < 0) return undefined;
      const size = parseInt(buf.subarray(at, lineEnd).toString('latin1'), 16);
      if (buf.length < lineEnd + 2 + size + 2) return undefined;
      if (size === 0) return { response: { status, headers, head, body: Buffer.concat(parts).toString('utf8') }, consumed: lineEnd + 4 };
      parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
  }
  // Neither: the body runs to the end of the connection (or there is none).
  if (!ended && status !== 204 && status !== 304) return undefined;
  return { response: { status, headers, head, body: buf.subarray(start).toString('utf8') }, consumed: buf.length };
}
