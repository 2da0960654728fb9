/**
 * How `npm run cli` and `npm run worker` find the embedded database that `npm start` runs when
 * MONGODB_URI is unset: once the server listens, the gateway writes its address into the data
 * directory (DATA_DIR/db/embedded-server.json, with the gateway's pid), and marks it stopped (no pid)
 * when it stops cleanly. A reader believes the file only while the process named there is alive and
 * the address accepts connections, so a file that a crash left behind is not followed, and the next
 * `npm start` writes over it. That next start asks for the same port again when it is free, so an
 * address copied earlier, and a worker already connected, keep working across a restart.
 */
import { connect, createServer } from 'node:net';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError, type Config } from '../config.js';

const ADDRESS_FILE = 'embedded-server.json';
/** The database the gateway uses on its embedded server. */
const DB_NAME = 'gateway';
/** A live server on loopback answers at once; this only bounds a hung one. */
const CONNECT_CHECK_MS = 10_000;

interface AddressRecord {
  /** The server's address, without a database name. */
  uri: string;
  /** The gateway that runs it; null once it stopped cleanly. */
  pid: number | null;
  startedAt: string;
  stoppedAt?: string;
}

export type EmbeddedLookup = { ok: true; uri: string } | { ok: false; reason: string };

/** Where the embedded database keeps its files for a DATA_DIR. */
export function embeddedDbPath(dataDir: string): string {
  return path.resolve(dataDir, 'db');
}

/** The URI of the gateway's database on an embedded server at `serverUri`. */
export function gatewayDatabaseUri(serverUri: string): string {
  return `${serverUri.replace(/\/?$/, '/')}${DB_NAME}`;
}

/**
 * The port to start the embedded server on: the one of its last run while it is free (so its address
 * stays the same across restarts), else 0 (any free port). Free means this process could listen on it
 * just now; a start that loses the port in between fails with EADDRINUSE.
 */
export async function preferredPort(dbPath: string): Promise<number> {
  const last = await readRecord(path.join(dbPath, ADDRESS_FILE));
  if (!last) return 0;
  const { hostname, port } = new URL(last.uri);
  return (await canListen(hostname.replace(/^\[|\]$/g, ''), Number(port))) ? Number(port) : 0;
}

/**
 * Writes the running server's address for other processes (replacing a file an earlier run left),
 * whole or not at all: a reader never sees half of it. Returns what marks it stopped, only while the
 * file is still this process's (a later gateway's file stays).
 */
export async function advertiseEmbedded(dbPath: string, serverUri: string): Promise<() => Promise<void>> {
  const file = path.join(dbPath, ADDRESS_FILE);
  const record: AddressRecord = { uri: serverUri, pid: process.pid, startedAt: new Date().toISOString() };
  await writeWhole(file, record);
  return async () => {
    if ((await readRecord(file))?.pid === process.pid) await writeWhole(file, { ...record, pid: null, stoppedAt: new Date().toISOString() });
  };
}

async function writeWhole(file: string, record: AddressRecord): Promise<void> {
  const partial = `${file}.${process.pid}.tmp`;
  await writeFile(partial, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  await rename(partial, file);
}

/** The gateway's database on the embedded server running from `dbPath`, or why there is none to use. */
export async function findEmbedded(dbPath: string): Promise<EmbeddedLookup> {
  const record = await readRecord(path.join(dbPath, ADDRESS_FILE));
  const none = `no embedded database is running from ${dbPath}: start the gateway (npm start, with the same DATA_DIR), which runs it, or set MONGODB_URI`;
  if (!record) return { ok: false, reason: none };
  if (record.pid === null) return { ok: false, reason: `${none} (the last one stopped at ${record.stoppedAt ?? 'an unknown time'})` };
  if (!processAlive(record.pid) || !(await accepts(record.uri))) return { ok: false, reason: `${none} (the one started by process ${record.pid} is gone)` };
  return { ok: true, uri: gatewayDatabaseUri(record.uri) };
}

/**
 * The database of a process that is not the gateway (the CLI, a standalone worker): MONGODB_URI, else
 * (not in production) the embedded database running from DATA_DIR/db; a ConfigError saying what to do
 * when neither is.
 */
export async function sharedDatabaseUri(config: Pick<Config, 'MONGODB_URI' | 'DATA_DIR' | 'NODE_ENV'>): Promise<string> {
  if (config.MONGODB_URI) return config.MONGODB_URI;
  // As for the gateway: production never runs on the embedded server.
  if (config.NODE_ENV === 'production') throw new ConfigError('Invalid configuration:\n  MONGODB_URI: is required when NODE_ENV=production');
  const found = await findEmbedded(embeddedDbPath(config.DATA_DIR));
  if (!found.ok) throw new ConfigError(`Invalid configuration:\n  MONGODB_URI: is not set, and ${found.reason}`);
  return found.uri;
}

async function readRecord(file: string): Promise<AddressRecord | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as Partial<AddressRecord>;
    const pidOk = parsed.pid === null || Number.isInteger(parsed.pid);
    return typeof parsed.uri === 'string' && /^mongodb:\/\/[^/]+:\d+\/?$/.test(parsed.uri) && pidOk ? (parsed as AddressRecord) : null;
  } catch {
    // Not written by advertiseEmbedded (its writes are whole): as good as absent.
    return null;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, but another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function canListen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, host, () => probe.close(() => resolve(true)));
  });
}

/** Whether the address takes a TCP connection (a pid reused by another program does not listen there). */
function accepts(serverUri: string): Promise<boolean> {
  const { hostname, port } = new URL(serverUri);
  return new Promise((resolve) => {
    const socket = connect({ host: hostname.replace(/^\[|\]$/g, ''), port: Number(port) });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(CONNECT_CHECK_MS, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
