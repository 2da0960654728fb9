// Embedded MongoDB-compatible server for tests and local development (production uses a real MongoDB
// through MONGODB_URI). Speaks the wire protocol to the official driver, mongoose, Agenda and GridFS.
import { EmbeddedServer } from './server.js';

export type EmbeddedMongo = { uri: string; port: number; stop(): Promise<void> };

export type EmbeddedMongoOptions = {
  port?: number;
  host?: string;
  dbPath?: string;
  /** Journal bytes past which a new snapshot replaces it (default 64 MiB, or the snapshot's size if larger). */
  journalCompactBytes?: number;
  /**
   * MiB of change events (their BSON size) kept for change streams to read and resume from; past it the
   * oldest are dropped, as from mongod's capped oplog (default 64; fractions allowed).
   */
  changelogMb?: number;
};

export async function startEmbeddedMongo(opts: EmbeddedMongoOptions = {}): Promise<EmbeddedMongo> {
  const host = opts.host ?? '127.0.0.1';
  const { changelogMb } = opts;
  if (changelogMb !== undefined && !(Number.isFinite(changelogMb) && changelogMb > 0)) {
    throw new RangeError(`changelogMb must be a positive number of MiB, got ${changelogMb}`);
  }
  const server = new EmbeddedServer({
    port: opts.port ?? 0,
    host,
    dbPath: opts.dbPath,
    journalCompactBytes: opts.journalCompactBytes,
    changelogBytes: changelogMb === undefined ? undefined : Math.round(changelogMb * 1024 * 1024),
  });
  const port = await server.listen();
  let stopping: Promise<void> | undefined;
  // A wildcard listener is reached through loopback; IPv6 literals need brackets in a URI.
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
  return {
    uri: `mongodb://${reachable}:${port}/`,
    port,
    stop: () => (stopping ??= server.close()),
  };
}
