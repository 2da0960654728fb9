// Command handlers, one per database command the supported clients send. Replies and errors follow
// mongod's shapes (writeErrors inside write replies, lastErrorObject in findAndModify, Long cursor ids).
import { BSON, Long, ObjectId, type Timestamp } from 'bson';
import { Aggregator } from 'mingo';
import { parseWriteStage, runWriteStage } from './aggregate-writes.js';
import { bsonText, canonicalKey, compareValues, deepCopy, isPlainObject, toNumber, typeRank, type Doc, type StringCompare } from './bson-order.js';
import { documentBytes } from './bson-size.js';
import { planCollated } from './collated-pipeline.js';
import { collatorFor, notWithCollation, type Collator } from './collation.js';
import { indexNameFor, parseSort, type Collection, type IndexSpec } from './collection.js';
import { Engine, streamSees, type ChangeEvent, type ChangeStreamState } from './engine.js';
import { MongoError, commandNotFound, namespaceNotFound } from './errors.js';
import { compileFilter, MINGO_OPTIONS, pathValues, refuseJavaScript } from './matcher.js';
import { hashedSpecProblem } from './hashed.js';
import { currentOps, parseCurrentOpOptions, serverStatusSections, type Monitor } from './monitor.js';
import { compileProjection } from './projection.js';
import { applyUpdate, isOperatorUpdate, seedFromFilter, validateUpdate } from './update.js';
import { collStatsReply, databaseBytes, dbStatsReply, parseScale } from './stats.js';
import { parseValidator, validateWrite } from './validator.js';

export type CommandContext = { db: string; connectionId: number; monitor: Monitor };
type Handler = (engine: Engine, cmd: Doc, ctx: CommandContext) => Doc | Promise<Doc>;

export const MAX_BSON_SIZE = 16 * 1024 * 1024;
const BATCH_BYTES = MAX_BSON_SIZE - 64 * 1024;
const DEFAULT_BATCH = 101;
export const MAX_WIRE_VERSION = 21;
const VERSION = '7.0.0';

// ---- helpers ----

function collName(cmd: Doc, key: string): string {
  const v = cmd[key];
  if (typeof v !== 'string' || v.length === 0) {
    throw new MongoError(73, `collection name has invalid type ${typeof v}`, 'InvalidNamespace');
  }
  return v;
}

function toBigIntId(v: unknown): bigint {
  if (typeof v === 'number') return BigInt(v);
  if (typeof v === 'bigint') return v;
  if (v instanceof Long) return v.toBigInt();
  throw new MongoError(14, 'cursor id must be a long', 'TypeMismatch');
}

/** Takes up to `n` documents from `pos` without exceeding the 16 MB reply budget. */
function takeBatch(docs: Doc[], pos: number, n: number): Doc[] {
  const end = Math.min(docs.length, pos + (n > 0 ? n : Number.MAX_SAFE_INTEGER));
  let bytes = 0;
  let i = pos;
  for (; i < end; i++) {
    bytes += BSON.calculateObjectSize(docs[i]);
    if (bytes > BATCH_BYTES && i > pos) break;
  }
  return docs.slice(pos, i);
}

function cursorReply(engine: Engine, ns: string, docs: Doc[], batchSize: number | undefined, singleBatch = false): Doc {
  // batchSize 0 asks for an empty first batch (the cursor is only opened).
  const first = batchSize === 0 && !singleBatch ? [] : takeBatch(docs, 0, batchSize ?? DEFAULT_BATCH);
  const id = singleBatch ? Long.ZERO : engine.openCursor(ns, docs, first.length);
  return { cursor: { firstBatch: first, id, ns }, ok: 1 };
}

function writeError(index: number, e: unknown): Doc {
  if (e instanceof MongoError) return { index, code: e.code, errmsg: e.message, ...e.extra };
  return { index, code: 1, errmsg: (e as Error).message };
}

function withIdFirst(doc: Doc): Doc {
  if (doc._id === undefined) return { _id: new ObjectId(), ...doc };
  if (Object.keys(doc)[0] === '_id') return doc;
  const { _id, ...rest } = doc;
  return { _id, ...rest };
}

/** mongod's limit on a stored document: BSONObjectTooLarge on insert, Location17419 after an update. */
function checkSize(doc: Doc, by: 'insert' | 'update'): void {
  const size = documentBytes(doc);
  if (size <= MAX_BSON_SIZE) return;
  if (by === 'insert') throw new MongoError(10334, `object to insert too large. size in bytes: ${size}, max size: ${MAX_BSON_SIZE}`, 'BSONObjectTooLarge');
  throw new MongoError(17419, `Resulting document after update is larger than ${MAX_BSON_SIZE}`, 'Location17419');
}

/**
 * What mongod (5.0+) checks in a document it inserts: `$`-prefixed field names are stored like any other
 * (https://www.mongodb.com/docs/manual/core/dot-dollar-considerations/), except inside _id.
 */
function checkFieldNames(doc: Doc): void {
  if (Array.isArray(doc._id)) throw new MongoError(2, "can't use an array for _id", 'BadValue');
  const dollar = isPlainObject(doc._id) ? dollarField(doc._id) : undefined;
  if (dollar !== undefined) {
    throw new MongoError(52, `_id fields may not contain '$'-prefixed fields: ${dollar} is not valid for storage.`, 'DollarPrefixedFieldName');
  }
}

function dollarField(v: Doc): string | undefined {
  for (const [k, x] of Object.entries(v)) {
    if (k.startsWith('$')) return k;
    const inner = isPlainObject(x) ? dollarField(x) : undefined;
    if (inner !== undefined) return inner;
  }
  return undefined;
}

/** Builds the document an upsert inserts. */
function upsertDocument(filter: Doc, update: Doc | Doc[], arrayFilters: Doc[] | undefined, strings?: StringCompare): Doc {
  const seed = seedFromFilter(filter);
  let doc: Doc;
  if (!Array.isArray(update) && !isOperatorUpdate(update)) {
    doc = { ...deepCopy(update) };
    if (doc._id === undefined && seed._id !== undefined) doc = { _id: seed._id, ...doc };
  } else {
    doc = applyUpdate(seed, update, { inserting: true, arrayFilters, filter, strings }).doc;
  }
  return withIdFirst(doc);
}

// ---- handshake and server info ----

function hello(engine: Engine, cmd: Doc, ctx: CommandContext): Doc {
  return {
    helloOk: true,
    ismaster: true,
    isWritablePrimary: true,
    maxBsonObjectSize: MAX_BSON_SIZE,
    maxMessageSizeBytes: 48_000_000,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId: ctx.connectionId,
    minWireVersion: 0,
    maxWireVersion: MAX_WIRE_VERSION,
    readOnly: false,
    ok: 1,
  };
}

const buildInfo: Handler = () => ({
  version: VERSION,
  gitVersion: 'embedded',
  versionArray: [7, 0, 0, 0],
  bits: 64,
  debug: false,
  maxBsonObjectSize: MAX_BSON_SIZE,
  storageEngines: ['embedded'],
  javascriptEngine: 'none',
  modules: [],
  ok: 1,
});

const ok: Handler = () => ({ ok: 1 });

const refuseTransactions = (): never => {
  throw new MongoError(20, 'Transaction numbers are only allowed on a replica set member or mongos', 'IllegalOperation');
};

// ---- CRUD ----

const insert: Handler = (engine, cmd, ctx) => {
  const docs = cmd.documents as Doc[] | undefined;
  if (!Array.isArray(docs)) throw new MongoError(9, "BSON field 'insert.documents' is missing but a required field", 'FailedToParse');
  const coll = engine.ensureCollection(ctx.db, collName(cmd, 'insert'));
  const ordered = cmd.ordered !== false;
  const writeErrors: Doc[] = [];
  let n = 0;
  for (let i = 0; i < docs.length; i++) {
    try {
      const doc = withIdFirst(docs[i]);
      checkFieldNames(doc);
      checkSize(doc, 'insert');
      validateWrite(coll, doc, undefined, cmd);
      engine.insert(coll, doc);
      n++;
    } catch (e) {
      writeErrors.push(writeError(i, e));
      if (ordered) break;
    }
  }
  return writeErrors.length > 0 ? { n, writeErrors, ok: 1 } : { n, ok: 1 };
};

/** The collation an operation runs with: its own `collation`, else the collection's default. */
function collationOf(raw: unknown, coll: Collection | undefined): Collator | undefined {
  return raw === undefined ? coll?.collator : collatorFor(raw);
}

function findRows(
  coll: Collection | undefined,
  filter: Doc | undefined,
  sort: Doc | undefined,
  limit: number | undefined,
  skip?: number,
  hint?: unknown,
  collator?: Collator,
): Array<[number, Doc]> {
  if (!coll) {
    compileFilter(filter); // refuses unknown operators, as mongod does on a missing collection too
    return [];
  }
  if (hint !== undefined) return coll.queryHinted(filter, hint, { sort: parseSort(sort), limit, skip, collator });
  return coll.query(filter, { sort: parseSort(sort), limit, skip, collator });
}

const find: Handler = (engine, cmd, ctx) => {
  const name = collName(cmd, 'find');
  const coll = engine.getCollection(ctx.db, name);
  let limit = typeof cmd.limit === 'number' ? cmd.limit : Number(cmd.limit ?? 0);
  let singleBatch = cmd.singleBatch === true;
  if (limit < 0) {
    limit = -limit;
    singleBatch = true;
  }
  const skip = Number(cmd.skip ?? 0);
  if (skip < 0) throw new MongoError(51024, 'BSON field \'skip\' value must be >= 0', 'Location51024');
  const rows = findRows(coll, cmd.filter, cmd.sort, limit || undefined, skip, cmd.hint, collationOf(cmd.collation, coll));
  const project = compileProjection(cmd.projection, cmd.filter);
  const docs = rows.map(([, d]) => (project ? project(d) : d));
  let batchSize = cmd.batchSize === undefined ? DEFAULT_BATCH : Number(cmd.batchSize);
  if (limit > 0 && batchSize > limit) batchSize = limit;
  if (limit > 0 && batchSize > 0 && docs.length <= batchSize) singleBatch = true;
  return cursorReply(engine, `${ctx.db}.${name}`, docs, batchSize, singleBatch);
};

const getMore: Handler = (engine, cmd, ctx) => {
  const id = toBigIntId(cmd.getMore);
  const cursor = engine.cursors.get(id);
  const ns = `${ctx.db}.${String(cmd.collection)}`;
  if (!cursor) throw new MongoError(43, `cursor id ${id} not found`, 'CursorNotFound');
  if (cursor.ns !== ns && !(cursor.kind === 'change' && cursor.ns.endsWith('.$cmd.aggregate'))) {
    throw new MongoError(13, `Requested getMore on namespace '${ns}', but cursor belongs to a different namespace ${cursor.ns}`, 'Unauthorized');
  }
  cursor.lastUsed = Date.now();
  const batchSize = cmd.batchSize === undefined ? 0 : Number(cmd.batchSize);
  if (cursor.kind === 'change') return changeGetMore(engine, id, cursor.ns, cursor.stream, batchSize, cmd.maxTimeMS);
  const batch = takeBatch(cursor.docs, cursor.pos, batchSize);
  cursor.pos += batch.length;
  cursor.docsReturned += batch.length;
  cursor.batchesReturned++;
  let outId = Long.fromBigInt(id);
  if (cursor.pos >= cursor.docs.length) {
    engine.cursors.delete(id);
    outId = Long.ZERO;
  }
  return { cursor: { nextBatch: batch, id: outId, ns: cursor.ns }, ok: 1 };
};

/** A change-stream getMore waits up to maxTimeMS (mongod's default: 1 s) for events. */
async function changeGetMore(engine: Engine, id: bigint, ns: string, stream: ChangeStreamState, batchSize: number, maxTimeMS: unknown): Promise<Doc> {
  let batch: Doc[];
  try {
    batch = changeBatch(engine, stream, batchSize);
    const deadline = Date.now() + (maxTimeMS === undefined ? 1000 : Number(maxTimeMS));
    while (batch.length === 0 && Date.now() < deadline && engine.cursors.has(id)) {
      await engine.waitForEvents(deadline - Date.now(), (db, coll) => streamSees(stream, db, coll));
      batch = changeBatch(engine, stream, batchSize);
    }
  } catch (e) {
    // A getMore that fails kills its cursor, as on mongod.
    engine.cursors.delete(id);
    throw e;
  }
  const cursor = engine.cursors.get(id);
  if (cursor) {
    cursor.lastUsed = Date.now();
    cursor.docsReturned += batch.length;
    cursor.batchesReturned++;
  }
  return {
    cursor: { nextBatch: batch, id: cursor ? Long.fromBigInt(id) : Long.ZERO, ns, postBatchResumeToken: resumeToken(stream.after) },
    ok: 1,
  };
}

const killCursors: Handler = (engine, cmd) => {
  const killed: Long[] = [];
  const notFound: Long[] = [];
  for (const raw of (cmd.cursors as unknown[]) ?? []) {
    const id = toBigIntId(raw);
    if (engine.cursors.delete(id)) killed.push(Long.fromBigInt(id));
    else notFound.push(Long.fromBigInt(id));
  }
  engine.wakeAll();
  return { cursorsKilled: killed, cursorsNotFound: notFound, cursorsAlive: [], cursorsUnknown: [], ok: 1 };
};

const update: Handler = (engine, cmd, ctx) => {
  const updates = cmd.updates as Doc[] | undefined;
  if (!Array.isArray(updates)) throw new MongoError(9, "BSON field 'update.updates' is missing but a required field", 'FailedToParse');
  const name = collName(cmd, 'update');
  const ordered = cmd.ordered !== false;
  const writeErrors: Doc[] = [];
  const upserted: Doc[] = [];
  let n = 0;
  let nModified = 0;
  for (let i = 0; i < updates.length; i++) {
    const spec = updates[i];
    try {
      validateUpdate(spec.u);
      const filter = (spec.q ?? {}) as Doc;
      const multi = spec.multi === true;
      if (multi && !Array.isArray(spec.u) && !isOperatorUpdate(spec.u)) {
        throw new MongoError(9, 'multi update is not supported for replacement-style update', 'FailedToParse');
      }
      const coll = engine.getCollection(ctx.db, name);
      const collator = collationOf(spec.collation, coll);
      const rows = findRows(coll, filter, spec.sort, multi ? undefined : 1, undefined, spec.hint, collator);
      if (rows.length === 0) {
        if (spec.upsert) {
          const target = engine.ensureCollection(ctx.db, name);
          const doc = upsertDocument(filter, spec.u, spec.arrayFilters, collator?.compare);
          checkFieldNames(doc);
          checkSize(doc, 'update');
          validateWrite(target, doc, undefined, cmd);
          engine.insert(target, doc);
          n++;
          upserted.push({ index: i, _id: doc._id });
        }
        continue;
      }
      for (const [rid, before] of rows) {
        const out = applyUpdate(before, spec.u, { filter, arrayFilters: spec.arrayFilters, strings: collator?.compare });
        n++;
        if (out.modified) {
          checkSize(out.doc, 'update');
          validateWrite(coll!, out.doc, before, cmd);
          engine.replace(coll!, rid, out.doc, out.description);
          nModified++;
        }
      }
    } catch (e) {
      writeErrors.push(writeError(i, e));
      if (ordered) break;
    }
  }
  const reply: Doc = { n, nModified };
  if (upserted.length > 0) reply.upserted = upserted;
  if (writeErrors.length > 0) reply.writeErrors = writeErrors;
  reply.ok = 1;
  return reply;
};

const del: Handler = (engine, cmd, ctx) => {
  const deletes = cmd.deletes as Doc[] | undefined;
  if (!Array.isArray(deletes)) throw new MongoError(9, "BSON field 'delete.deletes' is missing but a required field", 'FailedToParse');
  const coll = engine.getCollection(ctx.db, collName(cmd, 'delete'));
  const ordered = cmd.ordered !== false;
  const writeErrors: Doc[] = [];
  let n = 0;
  for (let i = 0; i < deletes.length; i++) {
    try {
      const spec = deletes[i];
      const rows = findRows(coll, spec.q ?? {}, undefined, Number(spec.limit ?? 0) === 1 ? 1 : undefined, undefined, spec.hint, collationOf(spec.collation, coll));
      for (const [rid] of rows) {
        engine.remove(coll!, rid);
        n++;
      }
    } catch (e) {
      writeErrors.push(writeError(i, e));
      if (ordered) break;
    }
  }
  return writeErrors.length > 0 ? { n, writeErrors, ok: 1 } : { n, ok: 1 };
};

function shapeDoc(d: Doc, project: ((d: Doc) => Doc) | undefined): Doc {
  return project ? project(d) : d;
}

const findAndModify: Handler = (engine, cmd, ctx) => {
  const name = collName(cmd, Object.keys(cmd)[0]);
  const filter = (cmd.query ?? {}) as Doc;
  const project = compileProjection(cmd.fields, filter);
  const coll = engine.getCollection(ctx.db, name);
  const collator = collationOf(cmd.collation, coll);
  const [row] = findRows(coll, filter, cmd.sort, 1, undefined, cmd.hint, collator);
  if (cmd.remove) {
    if (cmd.update !== undefined) throw new MongoError(9, 'Cannot specify both an update and remove=true', 'FailedToParse');
    if (!row) return { lastErrorObject: { n: 0 }, value: null, ok: 1 };
    engine.remove(coll!, row[0]);
    return { lastErrorObject: { n: 1 }, value: shapeDoc(row[1], project), ok: 1 };
  }
  if (cmd.update === undefined) throw new MongoError(9, 'Either an update or remove=true must be specified', 'FailedToParse');
  validateUpdate(cmd.update);
  if (row) {
    const [rid, before] = row;
    const out = applyUpdate(before, cmd.update, { filter, arrayFilters: cmd.arrayFilters, strings: collator?.compare });
    if (out.modified) {
      checkSize(out.doc, 'update');
      validateWrite(coll!, out.doc, before, cmd);
      engine.replace(coll!, rid, out.doc, out.description);
    }
    return { lastErrorObject: { n: 1, updatedExisting: true }, value: shapeDoc(cmd.new ? out.doc : before, project), ok: 1 };
  }
  if (!cmd.upsert) return { lastErrorObject: { n: 0, updatedExisting: false }, value: null, ok: 1 };
  const target = engine.ensureCollection(ctx.db, name);
  const doc = upsertDocument(filter, cmd.update, cmd.arrayFilters, collator?.compare);
  checkFieldNames(doc);
  checkSize(doc, 'update');
  validateWrite(target, doc, undefined, cmd);
  engine.insert(target, doc);
  return { lastErrorObject: { n: 1, updatedExisting: false, upserted: doc._id }, value: cmd.new ? shapeDoc(doc, project) : null, ok: 1 };
};

function countMatches(coll: Collection, query: Doc | undefined, skip: number, limit: number, collator: Collator | undefined): number {
  if (!query || Object.keys(query).length === 0) {
    const n = Math.max(0, coll.docs.size - skip);
    return limit > 0 ? Math.min(n, limit) : n;
  }
  return coll.query(query, { skip, limit: limit || undefined, collator }).length;
}

const count: Handler = (engine, cmd, ctx) => {
  const coll = engine.getCollection(ctx.db, collName(cmd, 'count'));
  const collator = collationOf(cmd.collation, coll);
  if (!coll) {
    compileFilter(cmd.query as Doc | undefined);
    return { n: 0, ok: 1 };
  }
  if (cmd.hint !== undefined) coll.hintedIndex(cmd.hint);
  return { n: countMatches(coll, cmd.query as Doc | undefined, Number(cmd.skip ?? 0), Math.abs(Number(cmd.limit ?? 0)), collator), ok: 1 };
};

const distinct: Handler = (engine, cmd, ctx) => {
  const coll = engine.getCollection(ctx.db, collName(cmd, 'distinct'));
  const key = String(cmd.key);
  const seen = new Set<string>();
  const values: unknown[] = [];
  const collator = collationOf(cmd.collation, coll);
  for (const [, doc] of findRows(coll, cmd.query, undefined, undefined, undefined, cmd.hint, collator)) {
    for (const v of pathValues(doc, key.split('.'))) {
      for (const x of Array.isArray(v) ? v : [v]) {
        if (x === undefined) continue;
        const k = canonicalKey(x);
        if (!seen.has(k)) {
          seen.add(k);
          values.push(x);
        }
      }
    }
  }
  const strings = collator?.compare;
  if (!strings) {
    values.sort(compareValues);
    return { values, ok: 1 };
  }
  // Under a collation, values it holds equal ('a' and 'A' at strength 2) are one distinct value.
  values.sort((a, b) => compareValues(a, b, strings));
  return { values: values.filter((v, i) => i === 0 || compareValues(values[i - 1], v, strings) !== 0), ok: 1 };
};

// ---- aggregation and change streams ----

function resumeToken(seq: number): Doc {
  return { _data: seq.toString(16).padStart(16, '0').toUpperCase() };
}

function parseResumeToken(token: unknown): number {
  const data = isPlainObject(token) ? token._data : undefined;
  if (typeof data !== 'string' || !/^[0-9A-Fa-f]{1,16}$/.test(data)) {
    throw new MongoError(9, 'Invalid resume token', 'FailedToParse');
  }
  return Number.parseInt(data, 16);
}

function eventDoc(engine: Engine, e: ChangeEvent, stream: ChangeStreamState): Doc {
  const out: Doc = {
    _id: resumeToken(e.seq),
    operationType: e.operationType,
    clusterTime: e.clusterTime,
    wallTime: e.wallTime,
    ns: { db: e.db, coll: e.coll },
  };
  if (e.documentKey) out.documentKey = e.documentKey;
  if (e.operationType === 'update') {
    out.updateDescription = { updatedFields: e.updateDescription?.updatedFields ?? {}, removedFields: e.updateDescription?.removedFields ?? [], truncatedArrays: [] };
    if (stream.fullDocument === 'updateLookup') {
      const coll = engine.getCollection(e.db, e.coll);
      const rid = coll?.findRidById(e.documentKey?._id);
      out.fullDocument = rid === undefined ? null : coll!.docs.get(rid);
    } else if (stream.fullDocument === 'whenAvailable' || stream.fullDocument === 'required') {
      out.fullDocument = e.fullDocument ?? null;
    }
  } else if (e.fullDocument !== undefined) {
    out.fullDocument = e.fullDocument;
  }
  if (stream.fullDocumentBeforeChange === 'whenAvailable' || stream.fullDocumentBeforeChange === 'required') {
    if (e.fullDocumentBeforeChange) out.fullDocumentBeforeChange = e.fullDocumentBeforeChange;
  }
  return out;
}

function changeBatch(engine: Engine, stream: ChangeStreamState, batchSize: number): Doc[] {
  const events = engine.unreadEvents(stream);
  const out: Doc[] = [];
  for (const e of events) {
    stream.after = e.seq;
    if (!streamSees(stream, e.db, e.coll)) continue;
    if (!stream.showExpanded && e.operationType !== 'insert' && e.operationType !== 'update' && e.operationType !== 'replace' && e.operationType !== 'delete' && e.operationType !== 'drop' && e.operationType !== 'dropDatabase' && e.operationType !== 'rename') continue;
    const docs = stream.transform([eventDoc(engine, e, stream)]);
    out.push(...docs);
    if (batchSize > 0 && out.length >= batchSize) break;
  }
  return out;
}

function openChangeStream(engine: Engine, cmd: Doc, ctx: CommandContext, spec: Doc, rest: Doc[]): Doc {
  engine.markChangeStreams();
  const collection = typeof cmd.aggregate === 'string' ? cmd.aggregate : undefined;
  let after = engine.lastSeq;
  const token = spec.resumeAfter ?? spec.startAfter;
  if (token !== undefined) {
    after = parseResumeToken(token);
    engine.eventsAfter(after); // throws ChangeStreamHistoryLost when the point is gone
  } else if (spec.startAtOperationTime) {
    after = engine.seqAtTime(spec.startAtOperationTime as Timestamp);
  }
  // A change stream compares by the collation its aggregate names, never the collection's default
  // (mongod since 4.2, SERVER-39302: it reads the oplog, not the collection).
  const collator = cmd.collation === undefined ? undefined : collatorFor(cmd.collation);
  const transform = stagesTransform(rest, collator);
  const stream: ChangeStreamState = {
    db: ctx.db,
    coll: collection,
    after,
    fullDocument: String(spec.fullDocument ?? 'default'),
    fullDocumentBeforeChange: String(spec.fullDocumentBeforeChange ?? 'off'),
    transform,
    showExpanded: spec.showExpandedEvents === true,
    lost: false,
  };
  const ns = collection ? `${ctx.db}.${collection}` : `${ctx.db}.$cmd.aggregate`;
  const batchSize = Number(cmd.cursor?.batchSize ?? DEFAULT_BATCH);
  const firstBatch = batchSize > 0 ? changeBatch(engine, stream, batchSize) : [];
  const id = engine.openChangeCursor(ns, stream, firstBatch.length);
  return { cursor: { firstBatch, id, ns, postBatchResumeToken: resumeToken(stream.after) }, operationTime: engine.clusterTime(), ok: 1 };
}

/**
 * The stages after $changeStream (applied to each event) or $currentOp. Leading $match stages (the
 * usual filter on operationType or fields) run as compiled predicates; mingo runs whatever follows.
 * Under a collation, collated-pipeline.ts runs them.
 */
function stagesTransform(stages: Doc[], collator: Collator | undefined): (events: Doc[]) => Doc[] {
  if (collator) return planCollated(stages, collator);
  let leading = 0;
  while (leading < stages.length && isPlainObject(stages[leading]) && Object.keys(stages[leading]).length === 1 && isPlainObject(stages[leading].$match)) leading++;
  const matches = stages.slice(0, leading).map((stage) => compileFilter(stage.$match as Doc));
  const agg = leading < stages.length ? new Aggregator(stages.slice(leading), MINGO_OPTIONS) : undefined;
  return (events) => {
    const kept = matches.length === 0 ? events : events.filter((e) => matches.every((m) => m(e)));
    return agg && kept.length > 0 ? (agg.run(kept) as Doc[]) : kept;
  };
}

// The stages this server runs (through mingo, or itself where they read or write its collections:
// $out and $merge run in aggregate-writes.ts, which also decides where in a pipeline they may stand).
// Any other is refused as mongod refuses a stage it does not know, instead of being dropped or run on
// a copy.
const SUPPORTED_STAGES = new Set([
  '$addFields', '$bucket', '$bucketAuto', '$changeStream', '$count', '$currentOp', '$densify', '$documents', '$facet', '$fill',
  '$graphLookup', '$group', '$limit', '$listLocalSessions', '$lookup', '$match', '$merge', '$out', '$project', '$redact', '$replaceRoot',
  '$replaceWith', '$sample', '$set', '$setWindowFields', '$skip', '$sort', '$sortByCount', '$unionWith', '$unset', '$unwind',
]);

/** Refuses, before anything runs, a pipeline mongod would refuse or this server would answer wrongly. */
function checkPipeline(pipeline: unknown[]): void {
  pipeline.forEach((stage) => {
    if (!isPlainObject(stage) || Object.keys(stage).length !== 1) {
      throw new MongoError(40323, 'A pipeline stage specification object must contain exactly one field.', 'Location40323');
    }
    const [name] = Object.keys(stage);
    const spec = stage[name];
    if (name === '$geoNear') {
      // Geospatial indexes are refused (createIndexes), so mongod's answer is that none exists.
      throw new MongoError(27, '$geoNear requires a 2d or 2dsphere index, but none were found', 'IndexNotFound');
    }
    if (!SUPPORTED_STAGES.has(name)) throw new MongoError(40324, `Unrecognized pipeline stage name: '${name}'`, 'Location40324');
    if (name === '$match' && isPlainObject(spec)) compileFilter(spec);
    if (name === '$facet' && isPlainObject(spec)) for (const sub of Object.values(spec)) if (Array.isArray(sub)) checkPipeline(sub);
    if ((name === '$lookup' || name === '$unionWith') && isPlainObject(spec) && Array.isArray(spec.pipeline)) checkPipeline(spec.pipeline);
    refuseJavaScript(spec);
  });
}

function isCountGroup(stage: Doc): boolean {
  const group = stage.$group;
  if (!isPlainObject(group)) return false;
  const keys = Object.keys(group);
  if (keys.length !== 2 || keys[0] !== '_id') return false;
  const id = group._id;
  if (typeof id === 'string' && id.startsWith('$')) return false;
  if (isPlainObject(id) || Array.isArray(id)) return false;
  const acc = group[keys[1]];
  return isPlainObject(acc) && Object.keys(acc).length === 1 && acc.$sum === 1;
}

const aggregate: Handler = (engine, cmd, ctx) => {
  const pipeline = cmd.pipeline as Doc[] | undefined;
  if (!Array.isArray(pipeline)) throw new MongoError(9, "'pipeline' option must be specified as an array", 'FailedToParse');
  if (cmd.cursor === undefined && !cmd.explain) {
    throw new MongoError(9, "The 'cursor' option is required, except for aggregate with the explain argument", 'FailedToParse');
  }
  checkPipeline(pipeline);
  const write = parseWriteStage(engine, pipeline, ctx.db, cmd);
  const first = pipeline[0];
  if (first && isPlainObject(first) && '$changeStream' in first) {
    return openChangeStream(engine, cmd, ctx, first.$changeStream as Doc, pipeline.slice(1));
  }
  const name = typeof cmd.aggregate === 'string' ? cmd.aggregate : undefined;
  if (first && isPlainObject(first) && '$currentOp' in first && (ctx.db !== 'admin' || name !== undefined)) {
    throw new MongoError(73, "$currentOp must be run against the 'admin' database with {aggregate: 1}", 'InvalidNamespace');
  }
  let stages = pipeline;
  let source: Doc[];
  const coll = name === undefined ? undefined : engine.getCollection(ctx.db, name);
  const collator = collationOf(cmd.collation, coll);
  // $merge matches its `on` fields through a unique index of the aggregate's collation, which this server does not do.
  if (write?.stage === '$merge' && collator) throw notWithCollation('$merge');
  if (name === undefined) {
    if (first && '$currentOp' in first) {
      // The $match stages right after it run compiled: the reports hold Longs, which mingo does not compare.
      let matches = 1;
      while (matches < pipeline.length && '$match' in pipeline[matches]) matches++;
      source = stagesTransform(pipeline.slice(1, matches), collator)(currentOps(ctx.monitor, engine, parseCurrentOpOptions(first.$currentOp)));
      stages = pipeline.slice(matches);
    } else if (first && '$listLocalSessions' in first) {
      source = [];
      stages = pipeline.slice(1);
    } else if (first && '$documents' in first) {
      source = deepCopy(first.$documents as Doc[]);
      stages = pipeline.slice(1);
    } else {
      throw new MongoError(73, "{aggregate: 1} is not valid for '$match'; a collection is required.", 'InvalidNamespace');
    }
  } else {
    if (coll && cmd.hint !== undefined) coll.hintedIndex(cmd.hint);
    // Push a leading $match (and a following $sort/$limit) down to the planner so indexes serve it.
    let filter: Doc | undefined;
    let sort: Doc | undefined;
    let limit: number | undefined;
    if (first && '$match' in first && !JSON.stringify(first.$match).includes('$expr')) {
      filter = first.$match as Doc;
      stages = stages.slice(1);
      if (stages[0] && '$sort' in stages[0]) {
        sort = stages[0].$sort as Doc;
        stages = stages.slice(1);
        if (stages[0] && '$limit' in stages[0]) {
          limit = Number(stages[0].$limit);
          stages = stages.slice(1);
        }
      }
    }
    let skip: number | undefined;
    if (filter !== undefined && sort === undefined && stages[0] && '$skip' in stages[0]) {
      skip = Number(stages[0].$skip);
      stages = stages.slice(1);
    }
    if (filter !== undefined && limit === undefined && stages[0] && '$limit' in stages[0]) {
      limit = Number(stages[0].$limit);
      stages = stages.slice(1);
    }
    if (!coll && filter !== undefined) compileFilter(filter); // unknown operators fail on a missing collection too
    // countDocuments() sends [$match, ($skip), ($limit), {$group: {_id: 1, n: {$sum: 1}}}]: count directly.
    if (stages.length === 1 && isCountGroup(stages[0])) {
      const group = stages[0].$group as Doc;
      const n = coll ? countMatches(coll, filter, skip ?? 0, limit ?? 0, collator) : 0;
      const counted = n === 0 ? [] : [{ _id: group._id, [Object.keys(group)[1]]: n }];
      return cursorReply(engine, `${ctx.db}.${name}`, counted, cmd.cursor?.batchSize);
    }
    // With a hint the scan runs on the hinted index, so documents come in its order, as from find().hint().
    const rows = coll ? findRows(coll, filter, sort, limit, skip, cmd.hint, collator) : [];
    source = rows.map(([, d]) => deepCopy(d));
  }
  if (write) stages = stages.slice(0, -1);
  const resolver = (coll: string): Doc[] => engine.getCollection(ctx.db, coll)?.allDocs().map(deepCopy) ?? [];
  const results =
    stages.length === 0
      ? source
      : collator
        ? planCollated(stages, collator, resolver)(source)
        : (new Aggregator(stages, { ...MINGO_OPTIONS, collectionResolver: resolver }).run(source) as Doc[]);
  if (cmd.explain) return { stages: pipeline, ok: 1 };
  if (write) {
    runWriteStage(engine, write, results, cmd, { withIdFirst, checkFieldNames, checkSize, upsertDocument });
    return { cursor: { firstBatch: [], id: Long.ZERO, ns: `${ctx.db}.${name ?? '$cmd.aggregate'}` }, ok: 1 };
  }
  const batchSize = cmd.cursor?.batchSize;
  return cursorReply(engine, `${ctx.db}.${name ?? '$cmd.aggregate'}`, results, batchSize === undefined ? undefined : Number(batchSize));
};

// ---- namespaces and indexes ----

/**
 * Why mongod would refuse this key pattern, or why this server does: it builds ascending, descending
 * and hashed indexes only, so every other special index type (text, 2d, 2dsphere, wildcard,
 * columnstore) gets mongod's answer for an index plugin it does not have.
 */
function keyPatternProblem(key: Doc): string | undefined {
  for (const [field, d] of Object.entries(key)) {
    if (field === '$**' || field.endsWith('.$**')) return "Unknown index plugin 'wildcard'";
    if (typeof d === 'string' && d !== 'hashed') return d === 'geoHaystack' ? 'GeoHaystack indexes cannot be created in version 5.0 and above' : `Unknown index plugin '${d}'`;
    if (d !== 'hashed') {
      if (typeRank(d) !== 3) {
        return `Values in v:2 index key pattern cannot be of type ${Array.isArray(d) ? 'array' : typeof d === 'boolean' ? 'bool' : 'object'}. Only numbers > 0, numbers < 0, and strings are allowed.`;
      }
      const n = toNumber(d);
      if (Number.isNaN(n)) return 'Values in the index key pattern cannot be NaN.';
      if (n === 0) return 'Values in the index key pattern cannot be 0.';
    }
    if (field.split('.').some((part, i) => part.startsWith('$') && !(i > 0 && (part === '$id' || part === '$ref' || part === '$db')))) {
      return "Index key contains an illegal field name: field name starts with '$'.";
    }
  }
  return undefined;
}

function normaliseIndexSpec(raw: Doc, coll: Collection): IndexSpec {
  if (!isPlainObject(raw.key) || Object.keys(raw.key).length === 0) {
    throw new MongoError(67, 'Index keys cannot be empty.', 'CannotCreateIndex');
  }
  const problem = keyPatternProblem(raw.key);
  if (problem) throw new MongoError(67, `Error in specification ${bsonText(raw)} :: caused by :: ${problem}`, 'CannotCreateIndex');
  const spec: IndexSpec = { v: 2, key: raw.key, name: typeof raw.name === 'string' ? raw.name : indexNameFor(raw.key) };
  for (const [k, v] of Object.entries(raw)) {
    if (k === 'key' || k === 'name' || k === 'v' || k === 'background' || k === 'collation') continue;
    spec[k] = v;
  }
  if (spec.unique === false) delete spec.unique;
  const hashedProblem = hashedSpecProblem(spec.key, Boolean(spec.unique));
  if (hashedProblem) throw hashedProblem;
  // An index without a collation takes the collection's default; the spec keeps the filled-in
  // collation (none for 'simple'), so it means the same after a restart or a rename.
  const collator = collationOf(raw.collation, coll);
  if (collator) spec.collation = collator.spec;
  return spec;
}

function sameOptions(a: IndexSpec, b: IndexSpec): boolean {
  const pick = (s: IndexSpec): string =>
    canonicalKey({
      unique: Boolean(s.unique),
      sparse: Boolean(s.sparse),
      ttl: s.expireAfterSeconds ?? null,
      pfe: s.partialFilterExpression ?? null,
      collation: s.collation ?? null,
    });
  return pick(a) === pick(b);
}

const createIndexes: Handler = (engine, cmd, ctx) => {
  const name = collName(cmd, 'createIndexes');
  const specs = cmd.indexes as Doc[] | undefined;
  if (!Array.isArray(specs) || specs.length === 0) throw new MongoError(9, 'Must specify at least one index to create', 'FailedToParse');
  for (const raw of specs) if (isPlainObject(raw) && raw.collation !== undefined) collatorFor(raw.collation); // before creating the collection
  const existed = engine.getCollection(ctx.db, name) !== undefined;
  const coll = engine.ensureCollection(ctx.db, name);
  const before = coll.indexes.length;
  for (const raw of specs) {
    const spec = normaliseIndexSpec(raw, coll);
    const byName = coll.indexes.find((i) => i.spec.name === spec.name);
    // Indexes on one key pattern may differ by collation: look for one with the same options.
    const sameKey = coll.indexes.find((i) => canonicalKey(i.spec.key) === canonicalKey(spec.key) && sameOptions(i.spec, spec));
    if (byName) {
      if (canonicalKey(byName.spec.key) !== canonicalKey(spec.key)) {
        throw new MongoError(86, `An existing index has the same name as the requested index. Requested index: ${JSON.stringify(spec)}, existing index: ${JSON.stringify(byName.spec)}`, 'IndexKeySpecsConflict');
      }
      if (!sameOptions(byName.spec, spec)) {
        throw new MongoError(85, `An equivalent index already exists with the same name but different options. Requested index: ${JSON.stringify(spec)}, existing index: ${JSON.stringify(byName.spec)}`, 'IndexOptionsConflict');
      }
      continue;
    }
    if (sameKey) {
      throw new MongoError(85, `Index already exists with a different name: ${sameKey.spec.name}`, 'IndexOptionsConflict');
    }
    engine.createIndex(coll, spec);
  }
  const reply: Doc = { numIndexesBefore: before, numIndexesAfter: coll.indexes.length, createdCollectionAutomatically: !existed, ok: 1 };
  if (before === coll.indexes.length) reply.note = 'all indexes already exist';
  return reply;
};

const listIndexes: Handler = (engine, cmd, ctx) => {
  const name = collName(cmd, 'listIndexes');
  const coll = engine.getCollection(ctx.db, name);
  if (!coll) throw namespaceNotFound(`${ctx.db}.${name}`);
  return cursorReply(engine, `${ctx.db}.${name}`, coll.indexes.map((i) => ({ ...i.spec })), cmd.cursor?.batchSize);
};

const dropIndexes: Handler = (engine, cmd, ctx) => {
  const name = collName(cmd, Object.keys(cmd)[0]);
  const coll = engine.getCollection(ctx.db, name);
  if (!coll) throw namespaceNotFound(`${ctx.db}.${name}`);
  const was = coll.indexes.length;
  const target = cmd.index;
  let names: string[];
  if (target === '*') names = coll.indexes.slice(1).map((i) => i.spec.name);
  else if (typeof target === 'string') names = [target];
  else if (Array.isArray(target)) names = target.map(String);
  else if (isPlainObject(target)) {
    const found = coll.indexes.find((i) => canonicalKey(i.spec.key) === canonicalKey(target));
    if (!found) throw new MongoError(27, `can't find index with key: ${JSON.stringify(target)}`, 'IndexNotFound');
    names = [found.spec.name];
  } else throw new MongoError(9, 'index must be a string, array or object', 'FailedToParse');
  for (const n of names) {
    if (n === '_id_') throw new MongoError(72, 'cannot drop _id index', 'InvalidOptions');
    if (!coll.indexes.some((i) => i.spec.name === n)) throw new MongoError(27, `index not found with name [${n}]`, 'IndexNotFound');
  }
  for (const n of names) engine.dropIndex(coll, n);
  return { nIndexesWas: was, ok: 1 };
};

// Kinds of collection this server does not implement (time series, clustered, views, queryable
// encryption): refused with mongod's answer to an option it does not know, not created as a plain collection.
const UNSUPPORTED_CREATE_OPTIONS = ['timeseries', 'clusteredIndex', 'expireAfterSeconds', 'viewOn', 'pipeline', 'encryptedFields'];

const create: Handler = (engine, cmd, ctx) => {
  const name = collName(cmd, 'create');
  if (engine.getCollection(ctx.db, name)) throw new MongoError(48, `Collection ${ctx.db}.${name} already exists.`, 'NamespaceExists');
  if (cmd.capped && cmd.size === undefined) throw new MongoError(72, "the 'size' field is required when 'capped' is true", 'InvalidOptions');
  const unsupported = UNSUPPORTED_CREATE_OPTIONS.find((option) => cmd[option] !== undefined);
  if (unsupported) throw new MongoError(40415, `BSON field 'create.${unsupported}' is an unknown field.`, 'Location40415');
  const { create: _c, $db: _d, lsid: _l, $clusterTime: _t, writeConcern: _w, ...opts } = cmd;
  parseValidator(opts);
  // The default collation is kept filled in, as listCollections shows it; 'simple' is no collation.
  if (opts.collation !== undefined) {
    const collator = collatorFor(opts.collation);
    if (collator) opts.collation = collator.spec;
    else delete opts.collation;
  }
  engine.ensureCollection(ctx.db, name, opts);
  return { ok: 1 };
};

const drop: Handler = (engine, cmd, ctx) => {
  const name = collName(cmd, 'drop');
  const coll = engine.getCollection(ctx.db, name);
  if (!coll) throw namespaceNotFound(`${ctx.db}.${name}`);
  const was = coll.indexes.length;
  engine.dropCollection(ctx.db, name);
  return { nIndexesWas: was, ns: `${ctx.db}.${name}`, ok: 1 };
};

const listCollections: Handler = (engine, cmd, ctx) => {
  const colls = [...(engine.dbs.get(ctx.db)?.values() ?? [])];
  let docs: Doc[] = colls.map((c) => ({
    name: c.name,
    type: 'collection',
    options: c.options,
    info: { readOnly: false, uuid: engine.uuids.get(c.ns) },
    idIndex: { ...c.indexes[0].spec },
  }));
  if (cmd.filter && Object.keys(cmd.filter).length > 0) {
    const pred = new Aggregator([{ $match: cmd.filter }], MINGO_OPTIONS);
    docs = pred.run(docs) as Doc[];
  }
  if (cmd.nameOnly) docs = docs.map((d) => ({ name: d.name, type: d.type }));
  return cursorReply(engine, `${ctx.db}.$cmd.listCollections`, docs, cmd.cursor?.batchSize);
};

const listDatabases: Handler = (engine, cmd) => {
  const databases = [...engine.dbs.entries()].map(([name, colls]) => ({ name, sizeOnDisk: databaseBytes(colls.values()), empty: false }));
  if (cmd.nameOnly) return { databases: databases.map((d) => ({ name: d.name })), ok: 1 };
  const totalSize = databases.reduce((s, d) => s + d.sizeOnDisk, 0);
  return { databases, totalSize, totalSizeMb: Math.round(totalSize / 1048576), ok: 1 };
};

const dropDatabase: Handler = (engine, _cmd, ctx) => {
  engine.dropDatabase(ctx.db);
  return { dropped: ctx.db, ok: 1 };
};

const renameCollection: Handler = (engine, cmd) => {
  const split = (ns: string): [string, string] => {
    const i = ns.indexOf('.');
    return [ns.slice(0, i), ns.slice(i + 1)];
  };
  const [fromDb, from] = split(String(cmd.renameCollection));
  const [toDb, to] = split(String(cmd.to));
  engine.renameCollection(fromDb, from, toDb, to, cmd.dropTarget === true);
  return { ok: 1 };
};

const collStats: Handler = (engine, cmd, ctx) => {
  const name = collName(cmd, 'collStats');
  const coll = engine.getCollection(ctx.db, name);
  if (!coll) throw namespaceNotFound(`${ctx.db}.${name}`);
  return collStatsReply(coll, parseScale(cmd.scale));
};

const dbStats: Handler = (engine, cmd, ctx) => dbStatsReply(ctx.db, [...(engine.dbs.get(ctx.db)?.values() ?? [])], parseScale(cmd.scale));

const explain: Handler = (engine, cmd, ctx) => {
  const inner = cmd.explain as Doc;
  const verb = Object.keys(inner)[0];
  const name = String(inner[verb]);
  const coll = engine.getCollection(ctx.db, name);
  const collator = collationOf(inner.collation ?? inner.updates?.[0]?.collation ?? inner.deletes?.[0]?.collation, coll);
  const filter = (verb === 'find' ? inner.filter : verb === 'findAndModify' || verb === 'count' ? inner.query : inner.updates?.[0]?.q ?? inner.deletes?.[0]?.q ?? inner.pipeline?.[0]?.$match) as Doc | undefined;
  const plans = coll?.plan(filter ?? {}, collator);
  const stats = { keysExamined: 0, docsExamined: 0 };
  const limit = Math.abs(Number(inner.limit ?? 0)) || undefined;
  const rows = coll ? coll.query(filter, { sort: parseSort(inner.sort), limit, skip: Number(inner.skip ?? 0), collator }, stats) : [];
  const scan = (p: NonNullable<typeof plans>[number]): Doc => ({ stage: 'IXSCAN', indexName: p.index.spec.name, keyPattern: p.index.spec.key });
  const winningPlan = !plans
    ? { stage: 'COLLSCAN' }
    : plans.length === 1
      ? { stage: 'FETCH', inputStage: scan(plans[0]) }
      : { stage: 'FETCH', inputStage: { stage: 'OR', inputStages: plans.map(scan) } };
  return {
    queryPlanner: { namespace: `${ctx.db}.${name}`, winningPlan, rejectedPlans: [] },
    executionStats: { nReturned: rows.length, totalKeysExamined: stats.keysExamined, totalDocsExamined: stats.docsExamined, executionSuccess: true },
    ok: 1,
  };
};

const serverStatus: Handler = (engine, _cmd, ctx) => {
  const journal = engine.journalStats();
  return {
    host: 'localhost',
    version: VERSION,
    process: 'embedded-mongo',
    pid: Long.fromNumber(process.pid),
    ...serverStatusSections(ctx.monitor, engine),
    storageEngine: { name: 'embedded', persistent: journal !== undefined },
    // Not a mongod section: the --dbpath journal's size and compactions, for tests and benchmarks.
    ...(journal && { journal }),
    ok: 1,
  };
};

/** Fields of a currentOp command that are options or generic arguments, not part of its filter. */
const CURRENT_OP_ARGUMENTS = new Set([
  '$all', '$ownOps', '$truncateOps', '$db', 'lsid', '$clusterTime', '$readPreference', 'comment', 'maxTimeMS', 'readConcern',
  'writeConcern', 'apiVersion', 'apiStrict', 'apiDeprecationErrors', '$client',
]);

/**
 * mongod runs the currentOp command as `$currentOp` (idle connections with `$all`, commands over 1 KB
 * truncated) followed by a `$match` on the command's other fields, and answers in one document.
 */
const currentOp: Handler = (engine, cmd, ctx) => {
  const filter: Doc = {};
  for (const [key, value] of Object.entries(cmd).slice(1)) if (!CURRENT_OP_ARGUMENTS.has(key)) filter[key] = value;
  const match = compileFilter(filter);
  const ops = currentOps(ctx.monitor, engine, { idleConnections: Boolean(cmd.$all), idleCursors: false, truncateOps: true });
  return { inprog: ops.filter((op) => match(op)), ok: 1 };
};

export const COMMANDS: Record<string, Handler> = {
  hello,
  ismaster: hello,
  isMaster: hello,
  ping: ok,
  buildInfo,
  buildinfo: buildInfo,
  endSessions: ok,
  killAllSessions: ok,
  killSessions: ok,
  refreshSessions: ok,
  startSession: () => ({ id: { id: new ObjectId() }, timeoutMinutes: 30, ok: 1 }),
  commitTransaction: refuseTransactions,
  abortTransaction: refuseTransactions,
  getParameter: () => ({ featureCompatibilityVersion: { version: '7.0' }, ok: 1 }),
  setParameter: () => ({ was: null, ok: 1 }),
  getCmdLineOpts: () => ({ argv: ['embedded-mongo'], parsed: {}, ok: 1 }),
  hostInfo: () => ({ system: { hostname: 'localhost', numCores: 1 }, os: { type: process.platform }, ok: 1 }),
  whatsmyuri: () => ({ you: '127.0.0.1:0', ok: 1 }),
  connectionStatus: () => ({ authInfo: { authenticatedUsers: [], authenticatedUserRoles: [] }, ok: 1 }),
  serverStatus,
  getLog: () => ({ totalLinesWritten: 0, log: [], ok: 1 }),
  currentOp,
  fsync: () => ({ numFiles: 1, ok: 1 }),
  listCommands: () => ({ commands: Object.fromEntries(Object.keys(COMMANDS).map((k) => [k, {}])), ok: 1 }),
  insert,
  find,
  getMore,
  killCursors,
  update,
  delete: del,
  findAndModify,
  findandmodify: findAndModify,
  aggregate,
  count,
  distinct,
  createIndexes,
  listIndexes,
  dropIndexes,
  deleteIndexes: dropIndexes,
  create,
  drop,
  listCollections,
  listDatabases,
  dropDatabase,
  renameCollection,
  collStats,
  dbStats,
  explain,
};

/**
 * Runs one command; errors come back as mongod-shaped `ok: 0` replies. Synchronous except for
 * commands that wait (a getMore on a change stream), so most commands finish in one turn.
 */
export function runCommand(engine: Engine, body: Doc, ctx: CommandContext): Doc | Promise<Doc> {
  const name = Object.keys(body)[0];
  let result: Doc | Promise<Doc>;
  try {
    if (body.txnNumber !== undefined || body.startTransaction !== undefined || body.autocommit !== undefined) refuseTransactions();
    const handler = Object.prototype.hasOwnProperty.call(COMMANDS, name) ? COMMANDS[name] : undefined;
    if (!handler) throw commandNotFound(name);
    engine.runningCommand = body;
    result = handler(engine, body, ctx);
  } catch (e) {
    engine.commit();
    return errorReply(e);
  } finally {
    engine.runningCommand = undefined;
  }
  if (result instanceof Promise) {
    return result.then(
      (r) => {
        engine.commit();
        return r;
      },
      (e: unknown) => {
        engine.commit();
        return errorReply(e);
      },
    );
  }
  engine.commit();
  return result;
}

function errorReply(e: unknown): Doc {
  if (e instanceof MongoError) return e.toReply();
  return { ok: 0, errmsg: (e as Error)?.message ?? String(e), code: 1, codeName: 'InternalError' };
}
