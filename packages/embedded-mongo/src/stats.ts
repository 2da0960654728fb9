// Sizes for collStats, dbStats and listDatabases, measured rather than invented: a collection's data is
// the BSON size of its documents (what `bson`'s calculateObjectSize gives, mongod's `size`/`dataSize`);
// an index weighs the BSON size of its keys plus 8 bytes per entry for the record it points to. The
// server holds everything in memory and writes no data files, so `storageSize` is the data size
// (mongod's would be WiredTiger's compressed file size). Documents are never changed in place, so each
// one's size is measured once (see documentBytes), and so is each index entry's.
import { BSON } from 'bson';
import type { Doc } from './bson-order.js';
import { documentBytes } from './bson-size.js';
import type { Collection, Index } from './collection.js';
import { MongoError } from './errors.js';
import type { Entry } from './sorted-index.js';

const RECORD_ID_BYTES = 8;
const measured = new WeakMap<Entry, number>();

/** An index key as mongod stores it, a document of the key's values under empty names, plus its record id. */
function entryBytes(entry: Entry): number {
  let n = measured.get(entry);
  if (n === undefined) {
    n = 5 + RECORD_ID_BYTES;
    for (const value of entry.key) n += BSON.calculateObjectSize({ '': value }) - 5;
    measured.set(entry, n);
  }
  return n;
}

export function dataSize(coll: Collection): number {
  let n = 0;
  for (const doc of coll.docs.values()) n += documentBytes(doc);
  return n;
}

export function indexSize(index: Index): number {
  let n = 0;
  for (const entry of index.tree.scanFrom(undefined)) n += entryBytes(entry);
  return n;
}

/** The `scale` sizes are divided by (mongod's option of both commands): a number of at least 1. */
export function parseScale(raw: unknown): number {
  if (raw === undefined) return 1;
  const scale = Math.trunc(Number(raw));
  if (!(scale >= 1)) throw new MongoError(2, 'scale has to be >= 1', 'BadValue');
  return scale;
}

export function collStatsReply(coll: Collection, scale: number): Doc {
  const size = dataSize(coll);
  const count = coll.docs.size;
  const indexSizes: Doc = {};
  let totalIndexSize = 0;
  for (const index of coll.indexes) {
    const bytes = indexSize(index);
    indexSizes[index.spec.name] = Math.floor(bytes / scale);
    totalIndexSize += bytes;
  }
  return {
    ns: coll.ns,
    size: Math.floor(size / scale),
    count,
    avgObjSize: count === 0 ? 0 : Math.floor(size / count),
    numOrphanDocs: 0,
    storageSize: Math.floor(size / scale),
    freeStorageSize: 0,
    capped: Boolean(coll.options.capped),
    nindexes: coll.indexes.length,
    indexBuilds: [],
    totalIndexSize: Math.floor(totalIndexSize / scale),
    totalSize: Math.floor((size + totalIndexSize) / scale),
    indexSizes,
    scaleFactor: scale,
    ok: 1,
  };
}

export function dbStatsReply(db: string, colls: Collection[], scale: number): Doc {
  const objects = colls.reduce((n, c) => n + c.docs.size, 0);
  const data = colls.reduce((n, c) => n + dataSize(c), 0);
  const indexes = colls.flatMap((c) => c.indexes);
  const index = indexes.reduce((n, i) => n + indexSize(i), 0);
  return {
    db,
    collections: colls.length,
    views: 0,
    objects,
    avgObjSize: objects === 0 ? 0 : data / objects,
    dataSize: data / scale,
    storageSize: data / scale,
    indexes: indexes.length,
    indexSize: index / scale,
    totalSize: (data + index) / scale,
    scaleFactor: scale,
    ok: 1,
  };
}

/** What listDatabases reports as a database's `sizeOnDisk`: its data and indexes, all held in memory. */
export function databaseBytes(colls: Iterable<Collection>): number {
  let n = 0;
  for (const c of colls) n += dataSize(c) + c.indexes.reduce((s, i) => s + indexSize(i), 0);
  return n;
}
