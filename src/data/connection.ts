import mongoose, { type Connection } from 'mongoose';

export interface ConnectOptions {
  /** Database name; overrides the one in the URI (tests use one database per file). */
  dbName?: string;
  /** How long an operation waits for a reachable server before failing (then: 503 database_unavailable). */
  serverSelectionTimeoutMS?: number;
}

/**
 * Opens a mongoose connection (its own, not the global default, so tests and tools can hold several).
 * bufferCommands is off: while the database is unreachable an operation fails fast and the request gets
 * a 503 with Retry-After, instead of queueing in memory until a timeout far beyond any client's patience.
 */
export async function connectDatabase(uri: string, opts: ConnectOptions = {}): Promise<Connection> {
  const connection = mongoose.createConnection(uri, {
    dbName: opts.dbName,
    bufferCommands: false,
    autoIndex: false,
    autoCreate: false,
    serverSelectionTimeoutMS: opts.serverSelectionTimeoutMS ?? 3000,
    maxPoolSize: 50,
  });
  await connection.asPromise();
  return connection;
}

/** True when the error says the database could not be reached (as opposed to a query fault). */
export function isDatabaseUnavailableError(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const name = (err as { name?: unknown }).name;
  if (
    name === 'MongoServerSelectionError' ||
    name === 'MongoNetworkError' ||
    name === 'MongoNetworkTimeoutError' ||
    name === 'MongoNotConnectedError' ||
    name === 'MongoTopologyClosedError' ||
    name === 'MongoPoolClearedError' ||
    name === 'MongooseServerSelectionError'
  ) {
    return true;
  }
  const labels = (err as { errorLabels?: unknown }).errorLabels;
  if (Array.isArray(labels) && labels.includes('ResetPool')) return true;
  // mongoose with bufferCommands off, before (re)connection.
  const message = (err as { message?: unknown }).message;
  return typeof message === 'string' && /Cannot call `[^`]+` before initial connection is complete|Client must be connected/.test(message);
}

/** Readiness as the health route and the edge see it: nothing but yes-or-no answers. */
export interface HealthCheck {
  /** Does the database answer? Within about a second, whatever the database does. */
  ready(): Promise<boolean>;
  /**
   * True while the driver's own monitoring knows no server that takes writes (every server it
   * watches is down or unknown): work would wait out server selection and fail. Synchronous.
   */
  knownDown(): boolean;
}

/** How long /readyz waits for a ping before calling the database unavailable. */
const READY_PING_MS = 900;

/**
 * Readiness from the driver's server monitoring (SDAM): `topologyDescriptionChanged` says whether a
 * writable server is known, so an outage the driver has seen is answered at once instead of after
 * serverSelectionTimeoutMS. While the database is known down, asking keeps one ping waiting for a
 * server: a waiting server selection makes the monitors check every minHeartbeatFrequencyMS (500 ms)
 * rather than every heartbeat (10 s), so the recovery is seen as soon as it happens.
 */
export function databaseHealth(connection: Connection): HealthCheck {
  // Connected when this is built (connectDatabase resolved): the monitor has seen a server.
  let down = false;
  connection.getClient().on('topologyDescriptionChanged', (event) => {
    down = ![...event.newDescription.servers.values()].some((server) => server.isWritable);
  });
  let probing = false;
  const probe = () => {
    if (probing) return;
    probing = true;
    ping().then(
      () => (probing = false),
      () => (probing = false),
    );
  };
  const ping = () => connection.db!.command({ ping: 1 });
  return {
    knownDown() {
      if (down) probe();
      return down;
    },
    async ready() {
      if (down) {
        probe();
        return false;
      }
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), READY_PING_MS)));
      try {
        return await Promise.race([ping().then(() => true), late]);
      } catch {
        return false;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
