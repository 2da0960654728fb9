// Features this server does not implement, refused loudly through the command layer (src/commands.ts)
// with the error mongod gives when it does not have them: an unknown command (CommandNotFound), an
// unknown index plugin, an unknown create option, an unknown stage or operator, a disabled JavaScript
// engine. A real mongod serves these, so the rows run here rather than through the driver
// (semantics.test.ts holds the refusals that are mongod's own answers). Listed in the README's
// "Known differences from MongoDB".
import { Code } from 'bson';
import { describe, expect, it } from 'vitest';
import type { Doc } from '../../src/bson-order.js';
import { runCommand } from '../../src/commands.js';
import { Engine } from '../../src/engine.js';
import { Monitor } from '../../src/monitor.js';

const ctx = { db: 'unit', connectionId: 1, monitor: new Monitor() };

async function run(engine: Engine, cmd: Doc): Promise<Doc> {
  return runCommand(engine, cmd, ctx);
}

describe('refused commands and options', () => {
  const rows: Array<{ name: string; cmd: Doc; code: number; codeName: string; message: string }> = [
    { name: 'collMod', cmd: { collMod: 'c', validator: {} }, code: 59, codeName: 'CommandNotFound', message: "no such command: 'collMod'" },
    { name: 'mapReduce', cmd: { mapReduce: 'c', map: 'function(){}', reduce: 'function(){}', out: { inline: 1 } }, code: 59, codeName: 'CommandNotFound', message: "no such command: 'mapReduce'" },
    { name: 'a 2dsphere index', cmd: { createIndexes: 'c', indexes: [{ key: { loc: '2dsphere' }, name: 'loc' }] }, code: 67, codeName: 'CannotCreateIndex', message: "Unknown index plugin '2dsphere'" },
    { name: 'a 2d index', cmd: { createIndexes: 'c', indexes: [{ key: { loc: '2d' }, name: 'loc' }] }, code: 67, codeName: 'CannotCreateIndex', message: "Unknown index plugin '2d'" },
    { name: 'a text index', cmd: { createIndexes: 'c', indexes: [{ key: { body: 'text' }, name: 'body' }] }, code: 67, codeName: 'CannotCreateIndex', message: "Unknown index plugin 'text'" },
    { name: 'a wildcard index', cmd: { createIndexes: 'c', indexes: [{ key: { '$**': 1 }, name: 'w' }] }, code: 67, codeName: 'CannotCreateIndex', message: "Unknown index plugin 'wildcard'" },
    { name: 'a wildcard index on a sub-document', cmd: { createIndexes: 'c', indexes: [{ key: { 'a.$**': 1 }, name: 'w' }] }, code: 67, codeName: 'CannotCreateIndex', message: "Unknown index plugin 'wildcard'" },
    { name: 'a time-series collection', cmd: { create: 'ts', timeseries: { timeField: 't' } }, code: 40415, codeName: 'Location40415', message: "BSON field 'create.timeseries' is an unknown field." },
    { name: 'a clustered collection', cmd: { create: 'cl', clusteredIndex: { key: { _id: 1 }, unique: true } }, code: 40415, codeName: 'Location40415', message: "BSON field 'create.clusteredIndex' is an unknown field." },
    { name: 'a view', cmd: { create: 'v', viewOn: 'c', pipeline: [] }, code: 40415, codeName: 'Location40415', message: "BSON field 'create.viewOn' is an unknown field." },
    { name: '$where in find', cmd: { find: 'c', filter: { $where: 'this.a == 1' } }, code: 6108304, codeName: 'Location6108304', message: 'no globalScriptEngine in $where parsing' },
    { name: '$where as Code', cmd: { find: 'c', filter: { $where: new Code('function() { return true }') } }, code: 6108304, codeName: 'Location6108304', message: 'no globalScriptEngine in $where parsing' },
    { name: '$geoWithin', cmd: { find: 'c', filter: { loc: { $geoWithin: { $center: [[0, 0], 1] } } } }, code: 2, codeName: 'BadValue', message: 'unknown operator: $geoWithin' },
    {
      name: '$function in a pipeline',
      cmd: { aggregate: 'c', pipeline: [{ $addFields: { x: { $function: { body: 'function() { return 1 }', args: [], lang: 'js' } } } }], cursor: {} },
      code: 31264,
      codeName: 'Location31264',
      message: 'Cannot run server-side javascript without the javascript engine enabled',
    },
    {
      name: '$accumulator in $group',
      cmd: { aggregate: 'c', pipeline: [{ $group: { _id: null, x: { $accumulator: { init: 'function() {}', accumulate: 'function() {}', accumulateArgs: [], merge: 'function() {}', lang: 'js' } } } }], cursor: {} },
      code: 31264,
      codeName: 'Location31264',
      message: 'Cannot run server-side javascript',
    },
    { name: '$search', cmd: { aggregate: 'c', pipeline: [{ $search: { text: { query: 'x', path: 'a' } } }], cursor: {} }, code: 40324, codeName: 'Location40324', message: "Unrecognized pipeline stage name: '$search'" },
    { name: 'an unknown stage inside $facet', cmd: { aggregate: 'c', pipeline: [{ $facet: { f: [{ $bogus: 1 }] } }], cursor: {} }, code: 40324, codeName: 'Location40324', message: "Unrecognized pipeline stage name: '$bogus'" },
    { name: 'an unknown stage inside $lookup', cmd: { aggregate: 'c', pipeline: [{ $lookup: { from: 'd', as: 'x', pipeline: [{ $bogus: 1 }] } }], cursor: {} }, code: 40324, codeName: 'Location40324', message: "Unrecognized pipeline stage name: '$bogus'" },
    { name: '$where in a $match stage', cmd: { aggregate: 'c', pipeline: [{ $match: { $where: 'true' } }], cursor: {} }, code: 6108304, codeName: 'Location6108304', message: 'no globalScriptEngine' },
    { name: '$out before the last stage', cmd: { aggregate: 'c', pipeline: [{ $out: 'd' }, { $match: {} }], cursor: {} }, code: 40601, codeName: 'Location40601', message: '$out can only be the final stage in the pipeline' },
    { name: 'a stage with two fields', cmd: { aggregate: 'c', pipeline: [{ $match: {}, $limit: 1 }], cursor: {} }, code: 40323, codeName: 'Location40323', message: 'A pipeline stage specification object must contain exactly one field.' },
  ];
  it.each(rows)('$name', async ({ cmd, code, codeName, message }) => {
    const engine = new Engine();
    await run(engine, { insert: 'c', documents: [{ _id: 1, a: 1, loc: [0, 0] }] });
    const reply = await run(engine, cmd);
    expect(reply).toMatchObject({ ok: 0, code, codeName });
    expect(reply.errmsg).toContain(message);
  });

  it('a refused index or collection leaves nothing behind', async () => {
    const engine = new Engine();
    await run(engine, { createIndexes: 'c', indexes: [{ key: { loc: '2dsphere' }, name: 'loc' }] });
    await run(engine, { create: 'ts', timeseries: { timeField: 't' } });
    const indexes = await run(engine, { listIndexes: 'c', cursor: {} });
    expect(indexes.cursor.firstBatch.map((i: Doc) => i.name)).toEqual(['_id_']);
    expect(engine.getCollection('unit', 'ts')).toBeUndefined();
  });

  it('$where never runs the JavaScript it is given', async () => {
    const engine = new Engine();
    await run(engine, { insert: 'c', documents: [{ _id: 1 }] });
    await run(engine, { find: 'c', filter: { $where: new Code('globalThis.__whereRan = true; return true') } });
    expect((globalThis as Doc).__whereRan).toBeUndefined();
  });
});
