import { afterAll, beforeAll, inject } from 'vitest';
import { MongoClient, type Collection, type Db, type Document } from 'mongodb';

/**
 * A database of its own for one test file, on the server under test (`inject('mongoUri')`: the
 * embedded server, or a real MongoDB with MONGODB_URI), reached through the driver only and dropped
 * once the file's tests are done. Call it at the top of the file: it registers the file's beforeAll
 * and afterAll; `client`, `db` and `fresh()` are ready inside tests.
 *
 *   const testDb = useTestDb('semantics');
 *   it('...', async () => { const c = testDb.fresh(); await c.insertOne({ a: 1 }); });
 */
export function useTestDb(name: string) {
  const uri = inject('mongoUri');
  const dbName = `${name}_${process.pid}_${Date.now()}`;
  let client: MongoClient | undefined;
  let collections = 0;

  beforeAll(async () => {
    client = await MongoClient.connect(uri);
  });

  afterAll(async () => {
    await client?.db(dbName).dropDatabase();
    await client?.close();
  });

  const connected = (): MongoClient => {
    if (!client) throw new Error('useTestDb: the client connects in beforeAll; use it inside tests and hooks');
    return client;
  };

  return {
    uri,
    dbName,
    get client(): MongoClient {
      return connected();
    },
    get db(): Db {
      return connected().db(dbName);
    },
    /** A collection name no other test of the file uses, starting with `prefix`. */
    uniqueName(prefix = 'c'): string {
      return `${prefix}${++collections}`;
    },
    /** A collection no other test of the file uses. */
    fresh<T extends Document = Document>(): Collection<T> {
      return connected().db(dbName).collection<T>(`c${++collections}`);
    },
  };
}
