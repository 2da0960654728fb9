// collStats, dbStats and listDatabases report the BSON size of what is stored
// (https://www.mongodb.com/docs/manual/reference/command/collStats/, .../dbStats/): `size`/`dataSize`
// is the sum of the documents' BSON sizes, checked here against bson's calculateObjectSize. Through the
// driver only; the embedded server's own choices (storageSize equal to the data size, as it keeps no
// data files; index sizes from its keys) are checked only when the server says it is the embedded one.
import { describe, expect, it } from 'vitest';
import { Binary, BSON, type Document } from 'mongodb';
import { useTestDb } from './helpers/test-db.js';

const testDb = useTestDb('stats');

async function isEmbedded(): Promise<boolean> {
  return (await testDb.db.admin().command({ serverStatus: 1 })).storageEngine?.name === 'embedded';
}

// No doubles: every value reads back as the type it was written, so sizes can be compared exactly.
const docs: Document[] = [
  { _id: 1, s: 'a' },
  { _id: 2, s: 'x'.repeat(1000), n: 5, nested: { list: [1, 2, 3], t: 'y' } },
  { _id: 3, s: 'b', image: new Binary(new Uint8Array(100_000).fill(7)) },
];
const bytes = (list: Document[]): number => list.reduce((n, d) => n + BSON.calculateObjectSize(d), 0);

describe('collStats', () => {
  it('reports the BSON size of the documents, and follows updates and deletes', async () => {
    const c = testDb.fresh();
    await c.insertMany(docs);
    await c.createIndex({ s: 1 });
    const stats = await testDb.db.command({ collStats: c.collectionName });
    const size = bytes(docs);
    expect(size).toBeGreaterThan(100_000);
    expect(stats.count).toBe(3);
    expect(stats.size).toBe(size);
    expect(stats.avgObjSize).toBe(Math.floor(size / 3));
    expect(stats.nindexes).toBe(2);
    expect(Object.keys(stats.indexSizes).sort()).toEqual(['_id_', 's_1']);
    expect(stats.totalIndexSize).toBe(stats.indexSizes._id_ + stats.indexSizes.s_1);
    if (await isEmbedded()) {
      expect(stats.storageSize).toBe(size);
      expect(stats.totalSize).toBe(size + stats.totalIndexSize);
      // _id keys (Int32) and s keys, each with a record id: more than the bare values, far less than the data.
      expect(stats.indexSizes._id_).toBeGreaterThan(3 * 4);
      expect(stats.indexSizes.s_1).toBeGreaterThan(1000);
    } else {
      expect(stats.storageSize).toBeGreaterThan(0);
    }

    await c.updateOne({ _id: 1 } as Document, { $set: { s: 'a'.repeat(500) } });
    await c.deleteOne({ _id: 3 } as Document);
    const after = await testDb.db.command({ collStats: c.collectionName });
    expect(after.count).toBe(2);
    expect(after.size).toBe(bytes([{ _id: 1, s: 'a'.repeat(500) }, docs[1]]));
  });

  it('divides sizes by scale', async () => {
    const c = testDb.fresh();
    await c.insertMany(docs);
    const stats = await testDb.db.command({ collStats: c.collectionName, scale: 1024 });
    expect(stats.scaleFactor).toBe(1024);
    expect(stats.size).toBe(Math.floor(bytes(docs) / 1024));
    expect(stats.avgObjSize).toBe(Math.floor(bytes(docs) / 3));
  });

  it('refuses a scale below 1', async () => {
    const c = testDb.fresh();
    await c.insertOne({ a: 1 });
    await expect(testDb.db.command({ collStats: c.collectionName, scale: 0 })).rejects.toThrow();
  });
});

describe('dbStats and listDatabases', () => {
  it('add up the collections', async () => {
    const db = testDb.client.db(`${testDb.dbName}_db`);
    try {
      await db.collection('one').insertMany(docs.slice(0, 2));
      await db.collection('two').insertMany(docs.slice(2));
      await db.collection('two').createIndex({ s: 1 });
      const stats = await db.command({ dbStats: 1 });
      const size = bytes(docs);
      expect(stats.collections).toBe(2);
      expect(stats.objects).toBe(3);
      expect(stats.dataSize).toBe(size);
      expect(stats.avgObjSize).toBeCloseTo(size / 3, 5);
      expect(stats.indexes).toBe(3);
      const perColl = await Promise.all(['one', 'two'].map((name) => db.command({ collStats: name })));
      expect(stats.indexSize).toBe(perColl[0].totalIndexSize + perColl[1].totalIndexSize);
      const listed = (await testDb.client.db('admin').admin().listDatabases()).databases.find((d) => d.name === db.databaseName);
      expect(listed?.sizeOnDisk).toBeGreaterThan(0);
      if (await isEmbedded()) {
        expect(stats.storageSize).toBe(size);
        expect(stats.totalSize).toBe(size + stats.indexSize);
        expect(listed?.sizeOnDisk).toBe(stats.totalSize);
      }
    } finally {
      await db.dropDatabase();
    }
  });
});
