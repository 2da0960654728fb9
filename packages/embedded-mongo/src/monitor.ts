// What the server knows about itself, for serverStatus and currentOp: open connections, the operation
// each one is running, and mongod's operation counters. The TCP layer records; command handlers read.
import fs from 'node:fs';
import { BSON, Long } from 'bson';
import { bsonTypeName, isPlainObject, type Doc } from './bson-order.js';
import type { Cursor, Engine } from './engine.js';
import { MongoError, wrongFieldType } from './errors.js';

export type Connection = {
  id: number;
  /** The peer's address, `ip:port`. */
  client: string;
  /** The `client` document of the driver's first hello (driver, os, application name). */
  metadata: Doc | undefined;
  op: Operation | undefined;
};

/** A command between its arrival and its reply. */
export type Operation = { opid: number; connection: Connection; db: string; name: string; body: Doc; started: bigint };

/** mongod's default net.maxIncomingConnections; the listener refuses connections past it. */
export const MAX_CONNECTIONS = 1_000_000;

/** The write commands count documents or statements in their own counters, not in `command`. */
const WRITE_COUNTERS: Record<string, 'insert' | 'update' | 'delete'> = { insert: 'insert', update: 'update', delete: 'delete' };
/** find and aggregate count as queries (aggregate since MongoDB 6.0, SERVER-66495), getMore on its own. */
const READ_COUNTERS: Record<string, 'query' | 'getmore'> = { find: 'query', aggregate: 'query', getMore: 'getmore' };

export class Monitor {
  readonly startedAt = Date.now();
  /** `hostname:port`, as mongod names itself in currentOp. */
  host = 'localhost';
  readonly connections = new Map<number, Connection>();
  totalCreated = 0;
  readonly opcounters = { insert: 0, query: 0, update: 0, delete: 0, getmore: 0, command: 0 };
  private nextConnectionId = 1;
  private nextOpId = 1;

  connect(client: string): Connection {
    const connection: Connection = { id: this.nextConnectionId++, client, metadata: undefined, op: undefined };
    this.connections.set(connection.id, connection);
    this.totalCreated++;
    return connection;
  }

  disconnect(connection: Connection): void {
    this.connections.delete(connection.id);
  }

  /**
   * Records a command as running on its connection until `end`. Like mongod it counts reads and other
   * commands as they start; commands the server does not know are not counted.
   */
  begin(connection: Connection, db: string, body: Doc, known: boolean): Operation {
    const name = Object.keys(body)[0] ?? '';
    if (known && !(name in WRITE_COUNTERS)) this.opcounters[READ_COUNTERS[name] ?? 'command']++;
    if (connection.metadata === undefined && isPlainObject(body.client) && (name === 'hello' || name.toLowerCase() === 'ismaster')) {
      connection.metadata = body.client;
    }
    const op: Operation = { opid: this.nextOpId++, connection, db, name, body, started: process.hrtime.bigint() };
    connection.op = op;
    return op;
  }

  /**
   * Ends an operation. Writes count as mongod counts them: every document an insert tried, every
   * statement an update or delete ran (an ordered batch stops at its first error).
   */
  end(op: Operation, reply: Doc): void {
    if (op.connection.op === op) op.connection.op = undefined;
    const counter = WRITE_COUNTERS[op.name];
    if (!counter || reply.ok !== 1) return;
    const errors = Array.isArray(reply.writeErrors) ? (reply.writeErrors as Doc[]) : [];
    if (counter === 'insert') {
      this.opcounters.insert += Number(reply.n ?? 0) + errors.length;
      return;
    }
    const statements = (op.body[counter === 'update' ? 'updates' : 'deletes'] as unknown[] | undefined)?.length ?? 0;
    const ordered = op.body.ordered !== false;
    this.opcounters[counter] += ordered && errors.length > 0 ? Number(errors[0].index) + 1 : statements;
  }
}

/** The sections of serverStatus that describe the process, its connections, counters and cursors. */
export function serverStatusSections(monitor: Monitor, engine: Engine): Doc {
  const now = Date.now();
  const uptimeMillis = now - monitor.startedAt;
  const memory = process.memoryUsage();
  const active = [...monitor.connections.values()].filter((c) => c.op !== undefined).length;
  const virtualMiB = virtualMemoryMiB();
  return {
    uptime: Math.floor(uptimeMillis / 1000),
    uptimeMillis: Long.fromNumber(uptimeMillis),
    uptimeEstimate: Long.fromNumber(Math.floor(uptimeMillis / 1000)),
    localTime: new Date(now),
    connections: {
      current: monitor.connections.size,
      available: MAX_CONNECTIONS - monitor.connections.size,
      totalCreated: monitor.totalCreated,
      active,
    },
    opcounters: Object.fromEntries(Object.entries(monitor.opcounters).map(([k, v]) => [k, Long.fromNumber(v)])),
    mem: {
      bits: 64,
      resident: Math.round(memory.rss / 1024 ** 2),
      ...(virtualMiB !== undefined && { virtual: virtualMiB }),
      supported: virtualMiB !== undefined,
    },
    metrics: {
      cursor: {
        timedOut: Long.fromNumber(engine.timedOutCursors),
        open: { total: Long.fromNumber(engine.cursors.size), pinned: Long.fromNumber(pinnedCursors(monitor, engine).size) },
      },
    },
    // Not mongod sections: the change log kept for change streams, and the JavaScript heap.
    embedded: {
      changelog: engine.changelogStats(),
      heap: { usedBytes: memory.heapUsed, totalBytes: memory.heapTotal },
    },
  };
}

/** The process's virtual size in MiB, where /proc tells it (mongod reports it on every platform it runs on). */
function virtualMemoryMiB(): number | undefined {
  try {
    const kib = /VmSize:\s+(\d+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    return kib ? Math.round(Number(kib[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

export type CurrentOpOptions = { idleConnections: boolean; idleCursors: boolean; truncateOps: boolean };

const CURRENT_OP_OPTIONS = new Set(['allUsers', 'idleConnections', 'idleCursors', 'idleSessions', 'localOps', 'truncateOps']);

/**
 * Parses `$currentOp`'s options as mongod 7.0 does. There is no authentication, so every operation is
 * the caller's (allUsers changes nothing); no transactions, so no idle sessions hold locks
 * (idleSessions changes nothing); and no mongos (localOps changes nothing).
 */
export function parseCurrentOpOptions(spec: unknown): CurrentOpOptions {
  if (!isPlainObject(spec)) throw new MongoError(14, `$currentOp options must be specified in an object, but found: ${bsonTypeName(spec)}`, 'TypeMismatch');
  for (const [key, value] of Object.entries(spec)) {
    if (!CURRENT_OP_OPTIONS.has(key)) throw new MongoError(40415, `BSON field '$currentOp.${key}' is an unknown field.`, 'Location40415');
    if (typeof value === 'boolean') continue;
    if (key === 'allUsers' || key === 'localOps') {
      throw new MongoError(14, `The '${key}' parameter of the $currentOp stage must be a boolean value, but found: ${bsonTypeName(value)}`, 'TypeMismatch');
    }
    throw wrongFieldType(`$currentOp.${key}`, value, 'bool');
  }
  return { idleConnections: spec.idleConnections === true, idleCursors: spec.idleCursors === true, truncateOps: spec.truncateOps === true };
}

/**
 * What `$currentOp` reports, in mongod's shapes: every running command (the caller's own included), and
 * on request idle connections and idle cursors. Commands run one at a time on one event loop, so the
 * operations another connection can see running are the ones that wait: change-stream getMores.
 */
export function currentOps(monitor: Monitor, engine: Engine, opts: CurrentOpOptions): Doc[] {
  const now = process.hrtime.bigint();
  const currentOpTime = new Date().toISOString();
  const out: Doc[] = [];
  for (const c of monitor.connections.values()) {
    const base: Doc = { type: 'op', host: monitor.host, desc: `conn${c.id}`, connectionId: c.id, client: c.client };
    if (c.metadata) {
      const appName = isPlainObject(c.metadata.application) ? c.metadata.application.name : undefined;
      if (typeof appName === 'string') base.appName = appName;
      base.clientMetadata = c.metadata;
    }
    if (!c.op) {
      if (opts.idleConnections) out.push({ ...base, active: false, currentOpTime });
      continue;
    }
    const { op } = c;
    const micros = (now - op.started) / 1000n;
    const doc: Doc = { ...base, active: true, currentOpTime, opid: op.opid };
    if (op.body.lsid !== undefined) doc.lsid = op.body.lsid;
    doc.secs_running = Long.fromBigInt(micros / 1_000_000n);
    doc.microsecs_running = Long.fromBigInt(micros);
    doc.op = OP_TYPES[op.name] ?? 'command';
    doc.ns = namespaceOf(op);
    doc.command = opts.truncateOps ? truncated(op.body) : op.body;
    const cursor = op.name === 'getMore' ? cursorOf(engine, op.body.getMore) : undefined;
    if (cursor) doc.cursor = cursorDoc(cursor);
    doc.numYields = 0;
    doc.waitingForLock = false;
    doc.locks = {};
    out.push(doc);
  }
  if (opts.idleCursors) {
    const pinned = pinnedCursors(monitor, engine);
    for (const cursor of engine.cursors.values()) {
      if (pinned.has(cursor.id)) continue;
      const doc: Doc = { type: 'idleCursor', host: monitor.host, ns: cursor.ns };
      if (cursor.origin?.lsid !== undefined) doc.lsid = cursor.origin.lsid;
      doc.cursor = cursorDoc(cursor);
      out.push(doc);
    }
  }
  return out;
}

/** currentOp's `op`: the kind of operation a command performs. */
const OP_TYPES: Record<string, string> = { find: 'query', getMore: 'getmore', insert: 'insert', update: 'update', delete: 'remove' };

function namespaceOf(op: Operation): string {
  if (op.name === 'getMore') return `${op.db}.${String(op.body.collection)}`;
  const target = op.body[op.name];
  if (typeof target === 'string') return `${op.db}.${target}`;
  return op.name === 'aggregate' ? `${op.db}.$cmd.aggregate` : `${op.db}.$cmd`;
}

/** Cursors a running getMore holds; the others are idle. */
function pinnedCursors(monitor: Monitor, engine: Engine): Set<bigint> {
  const ids = new Set<bigint>();
  for (const c of monitor.connections.values()) {
    const cursor = c.op?.name === 'getMore' ? cursorOf(engine, c.op.body.getMore) : undefined;
    if (cursor) ids.add(cursor.id);
  }
  return ids;
}

function cursorOf(engine: Engine, id: unknown): Cursor | undefined {
  if (typeof id === 'bigint') return engine.cursors.get(id);
  if (typeof id === 'number') return engine.cursors.get(BigInt(id));
  if (id instanceof Long) return engine.cursors.get(id.toBigInt());
  return undefined;
}

function cursorDoc(cursor: Cursor): Doc {
  const changeStream = cursor.kind === 'change';
  const doc: Doc = {
    cursorId: Long.fromBigInt(cursor.id),
    createdDate: cursor.created,
    lastAccessDate: new Date(cursor.lastUsed),
    nDocsReturned: Long.fromNumber(cursor.docsReturned),
    nBatchesReturned: Long.fromNumber(cursor.batchesReturned),
    // Every cursor here times out after 10 idle minutes, whatever the client asked.
    noCursorTimeout: false,
    tailable: changeStream,
    awaitData: changeStream,
  };
  if (cursor.origin) doc.originatingCommand = cursor.origin;
  return doc;
}

const TRUNCATE_BYTES = 1024;

/**
 * mongod's truncation of a command over 1 KB in currentOp: a string summary in `$truncated` (itself cut
 * to about 1 KB, ending in "..."), with the command's comment kept beside it.
 */
function truncated(body: Doc): Doc {
  if (BSON.calculateObjectSize(body) <= TRUNCATE_BYTES) return body;
  const { comment, ...rest } = body;
  let summary = BSON.EJSON.stringify(rest, { relaxed: true });
  if (summary.length > TRUNCATE_BYTES) summary = `${summary.slice(0, TRUNCATE_BYTES)}...`;
  return comment === undefined ? { $truncated: summary } : { $truncated: summary, comment };
}

