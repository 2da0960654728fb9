/**
 * A real SMTP server on loopback for tests (smtp-server), so tests read what the gateway really sent
 * (parsed by mailparser), never a mocked transport.
 *
 *   const smtp = await startSmtpServer();                  // 127.0.0.1, port 0
 *   const t = await startTestApp({ SMTP_URL: smtp.url });  // credentials in the URL are accepted
 *   ... something that sends an email to alice@example.com ...
 *   const mail = await smtp.nextMessage('alice@example.com');
 *   expect(mail.subject).toBe('…'); const [link] = mail.links;
 *   await t.close(); await smtp.close();                   // the app first (it holds a pooled connection)
 *
 * nextMessage returns the oldest message to that address not yet returned, waiting for one when there
 * is none (up to `timeoutMs`, generous: the machine is busy).
 *
 * A slow mail server: `startSmtpServer({ hold: true })` receives each message and then holds its answer
 * to DATA until `release()`, so a test can see what the gateway does while its mail server has not
 * accepted a message yet (`holding` counts the messages held).
 */
import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer } from 'smtp-server';

export interface ReceivedEmail {
  /** Envelope recipients, lower-cased. */
  to: string[];
  /** Envelope sender. */
  from: string;
  /** The From header as written. */
  fromHeader: string;
  subject: string;
  text: string;
  /** The HTML body as sent (false when there was none). */
  html: string | false;
  /** Every http(s) link in the text body, in order. */
  links: string[];
  /** The user name the client authenticated with, if it did. */
  user: string | null;
  /** When the server accepted the message (end of DATA). */
  acceptedAt: number;
}

export interface TestSmtpServer {
  /** `smtp://test:secret@127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** Every message received so far, in order. */
  messages: ReceivedEmail[];
  nextMessage(address: string, timeoutMs?: number): Promise<ReceivedEmail>;
  /** How many messages went to an address so far. */
  countTo(address: string): number;
  /** Messages received and not yet answered (with `hold`). */
  holding(): number;
  /** Answers every held message, and every later one at once. */
  release(): void;
  close(): Promise<void>;
}

export async function startSmtpServer(opts: { hold?: boolean } = {}): Promise<TestSmtpServer> {
  const messages: ReceivedEmail[] = [];
  let holding = 0;
  let release = () => {};
  const released = opts.hold ? new Promise<void>((resolve) => (release = resolve)) : Promise.resolve();
  const claimed = new Set<ReceivedEmail>();
  const waiters: { address: string; resolve: (m: ReceivedEmail) => void }[] = [];

  const deliver = (mail: ReceivedEmail) => {
    messages.push(mail);
    for (const w of [...waiters]) {
      if (!mail.to.includes(w.address) || claimed.has(mail)) continue;
      claimed.add(mail);
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(mail);
    }
  };

  const server = new SMTPServer({
    // Plain SMTP on loopback: no STARTTLS (its certificate would be self-signed), any credentials.
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    allowInsecureAuth: true,
    closeTimeout: 1000,
    logger: false,
    onAuth(auth, _session, callback) {
      callback(null, { user: auth.username });
    },
    onData(stream, session, callback) {
      simpleParser(stream)
        .then(async (parsed) => {
          holding++;
          await released;
          holding--;
          const text = parsed.text ?? '';
          deliver({
            to: session.envelope.rcptTo.map((r) => r.address.toLowerCase()),
            from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            fromHeader: parsed.from?.text ?? '',
            subject: parsed.subject ?? '',
            text,
            html: parsed.html ?? false,
            links: [...text.matchAll(/https?:\/\/[^\s<>"]+/g)].map((m) => m[0]),
            user: typeof session.user === 'string' ? session.user : null,
            acceptedAt: performance.now(),
          });
          callback();
        })
        .catch((err: Error) => callback(err));
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;

  return {
    url: `smtp://test:secret@127.0.0.1:${port}`,
    port,
    messages,
    nextMessage(address, timeoutMs = 60_000) {
      const wanted = address.toLowerCase();
      const ready = messages.find((m) => m.to.includes(wanted) && !claimed.has(m));
      if (ready) {
        claimed.add(ready);
        return Promise.resolve(ready);
      }
      return new Promise<ReceivedEmail>((resolve, reject) => {
        const waiter = { address: wanted, resolve };
        waiters.push(waiter);
        setTimeout(() => {
          const i = waiters.indexOf(waiter);
          if (i < 0) return;
          waiters.splice(i, 1);
          reject(new Error(`no email to ${address} within ${timeoutMs} ms (received: ${messages.map((m) => `${m.to.join(',')}: ${m.subject}`).join('; ') || 'none'})`));
        }, timeoutMs).unref();
      });
    },
    countTo(address) {
      return messages.filter((m) => m.to.includes(address.toLowerCase())).length;
    },
    holding: () => holding,
    release: () => release(),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
