// TCP listener: frames messages, runs commands one at a time per connection in arrival order, and
// replies with OP_MSG (or OP_REPLY for legacy OP_QUERY handshakes).
import net from 'node:net';
import os from 'node:os';
import type { Doc } from './bson-order.js';
import { COMMANDS, runCommand, type CommandContext } from './commands.js';
import { Engine } from './engine.js';
import { MAX_CONNECTIONS, Monitor, type Connection } from './monitor.js';
import { MessageReader, encodeMsg, encodeReply, parseMessage, type Request } from './wire.js';

export type ServerOptions = {
  port: number;
  host: string;
  dbPath?: string;
  journalCompactBytes?: number;
  changelogBytes?: number;
  ttlIntervalMs?: number;
};

export class EmbeddedServer {
  readonly engine: Engine;
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private readonly monitor = new Monitor();
  private timers: NodeJS.Timeout[] = [];

  constructor(private readonly opts: ServerOptions) {
    this.engine = new Engine({ dbPath: opts.dbPath, journalCompactBytes: opts.journalCompactBytes, changelogBytes: opts.changelogBytes });
    this.server = net.createServer((socket) => this.accept(socket));
    this.server.maxConnections = MAX_CONNECTIONS;
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.opts.port, this.opts.host, () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    const ttl = setInterval(() => this.sweepExpired(), this.opts.ttlIntervalMs ?? 1000);
    const reap = setInterval(() => this.engine.reapCursors(), 60_000);
    ttl.unref();
    reap.unref();
    this.timers.push(ttl, reap);
    const { port } = this.server.address() as net.AddressInfo;
    this.monitor.host = `${os.hostname()}:${port}`;
    return port;
  }

  private accept(socket: net.Socket): void {
    socket.setNoDelay(true);
    this.sockets.add(socket);
    const reader = new MessageReader();
    const address = socket.remoteAddress ?? '';
    const connection = this.monitor.connect(`${address.includes(':') ? `[${address}]` : address}:${socket.remotePort}`);
    const ctx: CommandContext = { db: 'admin', connectionId: connection.id, monitor: this.monitor };
    // Requests on one connection are answered in order; a waiting getMore holds the ones behind it,
    // as mongod does (drivers never pipeline on a connection anyway).
    const pending: Buffer[] = [];
    let waiting = false;
    const drain = (): void => {
      while (!waiting && pending.length > 0) {
        const r = this.handle(socket, pending.shift()!, ctx, connection);
        if (r) {
          waiting = true;
          void r.then(() => {
            waiting = false;
            drain();
          });
        }
      }
    };
    socket.on('data', (data) => {
      try {
        for (const m of reader.push(data)) pending.push(m);
      } catch {
        socket.destroy();
        return;
      }
      drain();
    });
    socket.on('close', () => {
      this.sockets.delete(socket);
      this.monitor.disconnect(connection);
    });
    socket.on('error', () => socket.destroy());
  }

  /** Runs one request; returns a promise only when the command has to wait. */
  private handle(socket: net.Socket, message: Buffer, ctx: CommandContext, connection: Connection): Promise<void> | undefined {
    let req: Request;
    try {
      req = parseMessage(message);
    } catch {
      socket.destroy();
      return undefined;
    }
    const body: Doc = req.body;
    const db = req.kind === 'query' ? req.collection.split('.')[0] : typeof body.$db === 'string' ? body.$db : 'admin';
    ctx.db = db;
    const op = this.monitor.begin(connection, db, body, Object.prototype.hasOwnProperty.call(COMMANDS, Object.keys(body)[0]));
    const reply = runCommand(this.engine, body, ctx);
    if (reply instanceof Promise) {
      return reply.then((r) => {
        this.monitor.end(op, r);
        this.respond(socket, req, r);
      });
    }
    this.monitor.end(op, reply);
    this.respond(socket, req, reply);
    return undefined;
  }

  private respond(socket: net.Socket, req: Request, reply: Doc): void {
    if (socket.destroyed) return;
    if (req.kind === 'query') socket.write(encodeReply(req.requestId, reply));
    else if (!req.moreToCome) socket.write(encodeMsg(req.requestId, reply));
  }

  /** Removes documents whose TTL index date is older than expireAfterSeconds (mongod's TTL monitor). */
  sweepExpired(now = Date.now()): number {
    let removed = 0;
    for (const colls of this.engine.dbs.values()) {
      for (const coll of colls.values()) {
        for (const index of coll.indexes) {
          const ttl = index.spec.expireAfterSeconds;
          if (typeof ttl !== 'number' || index.fields.length !== 1) continue;
          const cutoff = new Date(now - ttl * 1000);
          const rows = coll.query({ [index.fields[0].path]: { $lte: cutoff } });
          for (const [rid] of rows) {
            this.engine.remove(coll, rid);
            removed++;
          }
        }
      }
    }
    this.engine.commit();
    return removed;
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const s of this.sockets) s.destroy();
    this.engine.wakeAll();
    await closed;
    await this.engine.close();
  }
}
