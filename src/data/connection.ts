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

/** Readiness as the health route sees it: nothing but a yes or no. */
export interface HealthCheck {
  ready(): Promise<boolean>;
}

export function databaseHealth(connection: Connection): HealthCheck {
  return {
    async ready() {
      try {
        await connection.db!.command({ ping: 1 }, { timeoutMS: 2000 });
        return true;
      } catch {
        return false;
      }
    },
  };
}
