// The aggregation stages that write: $out (https://www.mongodb.com/docs/manual/reference/operator/aggregation/out/)
// and $merge (https://www.mongodb.com/docs/manual/reference/operator/aggregation/merge/). Their specs are
// checked before the pipeline runs, with mongod's codes and messages; their writes go through the
// engine's insert and replace, with the checks the insert and update commands apply, so indexes,
// validators, the journal and change streams see them. mingo's own $out and $merge write into the
// copies its collection resolver hands out, so they never reach mingo.
import { ObjectId } from 'bson';
import { Aggregator } from 'mingo';
import { bsonTypeName, canonicalKey, compareValues, deepCopy, isPlainObject, type Doc } from './bson-order.js';
import { Collection } from './collection.js';
import { validateCollectionName, type Engine } from './engine.js';
import { MongoError, wrongFieldType } from './errors.js';
import { getPath } from './matcher.js';
import { applyUpdate, describeChange, type UpdateDescription } from './update.js';
import { validateWrite } from './validator.js';

/** What the insert and update commands check in a document before storing it; $out and $merge check the same. */
export type DocumentChecks = {
  withIdFirst(doc: Doc): Doc;
  checkFieldNames(doc: Doc): void;
  checkSize(doc: Doc, by: 'insert' | 'update'): void;
  upsertDocument(filter: Doc, update: Doc | Doc[], arrayFilters: Doc[] | undefined): Doc;
};

type WhenMatched = 'replace' | 'keepExisting' | 'merge' | 'fail' | Doc[];
type WhenNotMatched = 'insert' | 'discard' | 'fail';

export type WriteStage =
  | { stage: '$out'; db: string; coll: string }
  | { stage: '$merge'; db: string; coll: string; on: string[]; whenMatched: WhenMatched; whenNotMatched: WhenNotMatched; let: Doc | undefined };

const WRITE_STAGES = new Set(['$out', '$merge']);
// Each sub-pipeline refuses the write stages with its own code and wording.
const NESTED: Record<string, [number, string]> = {
  $facet: [40600, 'is not allowed to be used within a $facet stage'],
  $lookup: [51047, "is not allowed within a $lookup's sub-pipeline"],
  $unionWith: [31441, "is not allowed within a $unionWith's sub-pipeline"],
};
const INTERNAL_DBS = new Set(['admin', 'local', 'config']);
const MATCHED_MODES = new Set(['replace', 'keepExisting', 'merge', 'fail']);
const NOT_MATCHED_MODES = new Set(['insert', 'discard', 'fail']);
// The whenMatched/whenNotMatched pairs mongod implements (its merge strategy descriptors).
const SUPPORTED_MODES = new Set([
  'replace/insert', 'replace/fail', 'replace/discard', 'merge/insert', 'merge/fail', 'merge/discard',
  'keepExisting/insert', 'fail/insert', 'pipeline/insert', 'pipeline/fail', 'pipeline/discard',
]);
// The stages an update pipeline (and so a whenMatched pipeline) may hold.
const UPDATE_PIPELINE_STAGES = new Set(['$addFields', '$set', '$project', '$unset', '$replaceRoot', '$replaceWith']);

const stageName = (stage: unknown): string => (isPlainObject(stage) ? (Object.keys(stage)[0] ?? '') : '');

/**
 * Refuses $out and $merge anywhere but at the end of the top-level pipeline, and parses the one
 * there (undefined when the pipeline does not write). Runs before the pipeline does, as mongod parses
 * a pipeline before executing it, so a refused write leaves everything as it was.
 */
export function parseWriteStage(engine: Engine, pipeline: Doc[], db: string, cmd: Doc): WriteStage | undefined {
  pipeline.forEach((stage, i) => {
    const name = stageName(stage);
    refuseNestedWrites(stage);
    if (WRITE_STAGES.has(name) && isPlainObject(pipeline[0]) && '$changeStream' in pipeline[0]) {
      throw new MongoError(20, `${name} is not permitted in a $changeStream pipeline`, 'IllegalOperation');
    }
    if (WRITE_STAGES.has(name) && i !== pipeline.length - 1) {
      throw new MongoError(40601, `${name} can only be the final stage in the pipeline`, 'Location40601');
    }
  });
  const last = pipeline[pipeline.length - 1];
  const name = stageName(last);
  if (name === '$out') return parseOut(engine, last.$out, db);
  if (name === '$merge') return parseMerge(engine, last.$merge, db, cmd);
  return undefined;
}

function refuseNestedWrites(stage: Doc): void {
  const name = stageName(stage);
  const spec = isPlainObject(stage) ? stage[name] : undefined;
  if (!NESTED[name] || !isPlainObject(spec)) return;
  const subPipelines = name === '$facet' ? Object.values(spec) : [spec.pipeline];
  for (const sub of subPipelines) {
    if (!Array.isArray(sub)) continue;
    for (const inner of sub as Doc[]) {
      const innerName = stageName(inner);
      if (WRITE_STAGES.has(innerName)) throw new MongoError(NESTED[name][0], `${innerName} ${NESTED[name][1]}`, `Location${NESTED[name][0]}`);
      refuseNestedWrites(inner);
    }
  }
}

function unknownField(path: string): MongoError {
  return new MongoError(40415, `BSON field '${path}' is an unknown field.`, 'Location40415');
}

function missingField(path: string): MongoError {
  return new MongoError(40414, `BSON field '${path}' is missing but a required field`, 'Location40414');
}

function isValidCollectionName(name: string): boolean {
  try {
    validateCollectionName(name);
    return true;
  } catch {
    return false;
  }
}

function parseOut(engine: Engine, spec: unknown, defaultDb: string): WriteStage {
  let db = defaultDb;
  let coll: unknown = spec;
  if (isPlainObject(spec)) {
    for (const key of Object.keys(spec)) {
      // Time-series collections are not implemented, so $out answers as a 7.0.0 mongod, which has no such option.
      if (key !== 'db' && key !== 'coll') throw unknownField(`$out.${key}`);
    }
    if (spec.db === undefined) throw missingField('$out.db');
    if (spec.coll === undefined) throw missingField('$out.coll');
    if (typeof spec.db !== 'string') throw wrongFieldType('$out.db', spec.db, 'string');
    if (typeof spec.coll !== 'string') throw wrongFieldType('$out.coll', spec.coll, 'string');
    db = spec.db;
    coll = spec.coll;
  } else if (typeof spec !== 'string') {
    throw new MongoError(16990, `$out only supports a string or object argument, but found ${bsonTypeName(spec)}`, 'Location16990');
  }
  const name = coll as string;
  if (db.length === 0 || !isValidCollectionName(name)) throw new MongoError(73, `Invalid $out target namespace, ${db}.${name}`, 'InvalidNamespace');
  if (name.startsWith('system.')) throw new MongoError(17385, `Can't $out to special collection: ${name}`, 'Location17385');
  if (INTERNAL_DBS.has(db)) throw new MongoError(31321, `Can't $out to internal database: ${db}`, 'Location31321');
  if (engine.getCollection(db, name)?.options.capped) {
    throw new MongoError(17152, `namespace '${db}.${name}' is capped so it can't be used for $out`, 'Location17152');
  }
  return { stage: '$out', db, coll: name };
}

function parseMerge(engine: Engine, spec: unknown, defaultDb: string, cmd: Doc): WriteStage {
  if (typeof spec !== 'string' && !isPlainObject(spec)) {
    throw new MongoError(14, `$merge requires a string or object argument, but found ${bsonTypeName(spec)}`, 'TypeMismatch');
  }
  const options: Doc = typeof spec === 'string' ? { into: spec } : spec;
  for (const key of Object.keys(options)) {
    if (!['into', 'on', 'let', 'whenMatched', 'whenNotMatched'].includes(key)) throw unknownField(`$merge.${key}`);
  }
  const { into } = options;
  if (into === undefined) throw missingField('$merge.into');
  let db = defaultDb;
  let coll: unknown = into;
  if (isPlainObject(into)) {
    for (const key of Object.keys(into)) if (key !== 'db' && key !== 'coll') throw unknownField(`$merge.into.${key}`);
    if (into.db !== undefined && typeof into.db !== 'string') throw wrongFieldType('$merge.into.db', into.db, 'string');
    if (into.coll !== undefined && typeof into.coll !== 'string') throw wrongFieldType('$merge.into.coll', into.coll, 'string');
    db = into.db ?? defaultDb;
    coll = into.coll ?? '';
  } else if (typeof into !== 'string') {
    throw wrongFieldType('$merge.into', into, ['string', 'object']);
  }
  const name = coll as string;
  if (db.length === 0 || !isValidCollectionName(name)) throw new MongoError(73, `Invalid $merge target namespace: '${db}.${name}'`, 'InvalidNamespace');

  const whenMatched = options.whenMatched ?? 'merge';
  if (!Array.isArray(whenMatched) && !(typeof whenMatched === 'string' && MATCHED_MODES.has(whenMatched))) {
    throw new MongoError(2, `Enumeration value '${String(whenMatched)}' for field 'whenMatched' is not a valid value.`, 'BadValue');
  }
  const whenNotMatched = options.whenNotMatched ?? 'insert';
  if (!(typeof whenNotMatched === 'string' && NOT_MATCHED_MODES.has(whenNotMatched))) {
    throw new MongoError(2, `Enumeration value '${String(whenNotMatched)}' for field 'whenNotMatched' is not a valid value.`, 'BadValue');
  }
  const matchedMode = Array.isArray(whenMatched) ? 'pipeline' : whenMatched;
  if (!SUPPORTED_MODES.has(`${matchedMode}/${whenNotMatched}`)) {
    throw new MongoError(51181, `Combination of $merge modes 'whenMatched: ${matchedMode}' and 'whenNotMatched: ${whenNotMatched}' is not supported`, 'Location51181');
  }
  if (Array.isArray(whenMatched)) {
    for (const stage of whenMatched) {
      const stageKey = stageName(stage);
      if (!UPDATE_PIPELINE_STAGES.has(stageKey)) throw new MongoError(72, `${stageKey} is not allowed to be used within an update`, 'InvalidOptions');
    }
  }

  const on = parseOn(options.on);
  if (options.on !== undefined && !hasSupportingUniqueIndex(engine.getCollection(db, name), on, cmd.collation)) {
    throw new MongoError(51183, 'Cannot find index to verify that join fields will be unique', 'Location51183');
  }
  if (name.startsWith('system.')) throw new MongoError(31319, `Cannot $merge to special collection: ${name}`, 'Location31319');
  if (INTERNAL_DBS.has(db)) throw new MongoError(31320, `Cannot $merge to internal database: ${db}`, 'Location31320');

  const letSpec = options.let;
  if (letSpec !== undefined && !isPlainObject(letSpec)) throw wrongFieldType('$merge.let', letSpec, 'object');
  if (matchedMode !== 'pipeline' && letSpec !== undefined) {
    throw new MongoError(51199, `Cannot use 'let' variables with 'whenMatched: ${matchedMode}' mode`, 'Location51199');
  }
  if (letSpec?.new !== undefined && letSpec.new !== '$$ROOT') {
    throw new MongoError(51273, "'let' may not define a value for the reserved 'new' variable other than '$$ROOT'", 'Location51273');
  }
  return { stage: '$merge', db, coll: name, on, whenMatched: whenMatched as WhenMatched, whenNotMatched: whenNotMatched as WhenNotMatched, let: letSpec };
}

function parseOn(on: unknown): string[] {
  if (on === undefined) return ['_id'];
  const fields = typeof on === 'string' ? [on] : on;
  if (!Array.isArray(fields)) throw wrongFieldType('$merge.on', on, ['string', 'array']);
  const seen = new Set<string>();
  for (const field of fields) {
    if (typeof field !== 'string') throw new MongoError(14, `BSON field '$merge.on' must be a string or an array of strings, but found ${bsonTypeName(field)}`, 'TypeMismatch');
    if (seen.has(field)) throw new MongoError(31465, `Found a duplicate field '${field}'`, 'Location31465');
    seen.add(field);
  }
  return fields as string[];
}

/**
 * mongod's rule for the `on` fields: a unique, non-partial index whose key names exactly those fields
 * (in any order) with the aggregate's collation; on a missing collection only `_id` qualifies.
 */
function hasSupportingUniqueIndex(coll: Collection | undefined, on: string[], collation: unknown): boolean {
  if (!coll) return on.length === 1 && on[0] === '_id';
  const wanted = new Set(on);
  return coll.indexes.some(({ spec }) => {
    const keys = Object.entries(spec.key);
    return (
      (spec.unique === true || spec.name === '_id_') &&
      spec.partialFilterExpression === undefined &&
      keys.length === wanted.size &&
      keys.every(([field, direction]) => wanted.has(field) && typeof direction === 'number') &&
      canonicalKey(simpleAsNone(spec.collation)) === canonicalKey(simpleAsNone(collation))
    );
  });
}

const simpleAsNone = (collation: unknown): unknown => (collation === undefined || (isPlainObject(collation) && collation.locale === 'simple') ? null : collation);

/** Writes the aggregate's results as the stage says; throws, as mongod does, on the first failure. */
export function runWriteStage(engine: Engine, write: WriteStage, results: Doc[], cmd: Doc, checks: DocumentChecks): void {
  if (write.stage === '$out') replaceCollection(engine, write.db, write.coll, results, cmd, checks);
  else merge(engine, write, results, cmd, checks);
}

/**
 * $out: every document is first inserted into a scratch collection with the target's options,
 * indexes and validator (mongod's temporary collection), so a duplicate key or a failed validation
 * leaves the target as it was. Only then is the target dropped and refilled through the engine, which
 * cannot fail on the same documents.
 */
function replaceCollection(engine: Engine, db: string, name: string, results: Doc[], cmd: Doc, checks: DocumentChecks): void {
  const existing = engine.getCollection(db, name);
  const options = existing?.options ?? {};
  const specs = existing ? existing.indexes.slice(1).map((index) => ({ ...index.spec })) : [];
  const scratch = new Collection(db, name, options);
  for (const spec of specs) scratch.addIndex(spec);
  const docs = results.map((result) => {
    const doc = checks.withIdFirst(result);
    checks.checkFieldNames(doc);
    checks.checkSize(doc, 'insert');
    validateWrite(scratch, doc, undefined, cmd);
    scratch.insert(doc);
    return doc;
  });
  if (existing) engine.dropCollection(db, name);
  const target = engine.ensureCollection(db, name, options);
  for (const spec of specs) engine.createIndex(target, spec);
  for (const doc of docs) engine.insert(target, doc);
}

type MergeStage = Extract<WriteStage, { stage: '$merge' }>;

/**
 * $merge, document by document as mongod's update (or, for whenMatched 'fail', insert) commands do.
 * Like mongod's unordered write batch, a failing document does not stop the others: the first error
 * is reported once all are written, and writes already made stay.
 */
function merge(engine: Engine, spec: MergeStage, results: Doc[], cmd: Doc, checks: DocumentChecks): void {
  // mongod extracts every document's `on` values while building the batch, so a missing or array
  // value fails the stage before anything is written.
  const batch = results.map((result) => {
    const doc = spec.on.includes('_id') && result._id === undefined ? { _id: new ObjectId(), ...result } : result;
    const filter: Doc = {};
    for (const field of spec.on) {
      const value = getPath(doc, field);
      if (Array.isArray(value)) throw new MongoError(51185, `$merge write error: 'on' field '${field}' is an array`, 'Location51185');
      if (value === undefined || value === null) {
        throw new MongoError(51132, `$merge write error: 'on' field '${field}' cannot be missing, null, undefined or an array`, 'Location51132');
      }
      filter[field] = value;
    }
    return { doc, filter };
  });
  const letStage = Array.isArray(spec.whenMatched) ? letVariables(spec.let) : undefined;
  let firstError: unknown;
  let unmatched = 0;
  for (const { doc, filter } of batch) {
    try {
      if (spec.whenMatched === 'fail') {
        // mongod inserts: the unique index on the `on` fields refuses a match.
        insertInto(engine, spec, checks.withIdFirst(doc), cmd, checks, 'insert');
        continue;
      }
      const coll = engine.getCollection(spec.db, spec.coll);
      const [row] = coll ? coll.query(filter, { limit: 1 }) : [];
      if (row) {
        updateMatched(engine, coll!, row, doc, spec, letStage, cmd, checks);
      } else if (spec.whenNotMatched === 'fail') {
        unmatched++;
      } else if (spec.whenNotMatched === 'insert') {
        insertInto(engine, spec, newDocument(doc, filter, spec.whenMatched, checks), cmd, checks, 'update');
      }
    } catch (e) {
      firstError ??= mergeContext(e, spec);
    }
  }
  if (firstError !== undefined) throw firstError;
  if (unmatched > 0) {
    throw new MongoError(
      13113,
      '$merge could not find a matching document in the target collection for at least one document in the source collection',
      'MergeStageNoMatchingDocument',
    );
  }
}

/** The document an unmatched result inserts: the update's upsert for each mode, the result itself for a pipeline. */
function newDocument(doc: Doc, filter: Doc, whenMatched: WhenMatched, checks: DocumentChecks): Doc {
  if (Array.isArray(whenMatched)) return checks.withIdFirst(doc);
  if (whenMatched === 'replace') return checks.upsertDocument(filter, doc, undefined);
  return checks.upsertDocument(filter, whenMatched === 'keepExisting' ? { $setOnInsert: doc } : { $set: doc }, undefined);
}

function insertInto(engine: Engine, spec: MergeStage, doc: Doc, cmd: Doc, checks: DocumentChecks, by: 'insert' | 'update'): void {
  checks.checkFieldNames(doc);
  checks.checkSize(doc, by);
  const target = engine.ensureCollection(spec.db, spec.coll);
  validateWrite(target, doc, undefined, cmd);
  engine.insert(target, doc);
}

function updateMatched(
  engine: Engine,
  coll: Collection,
  [rid, before]: [number, Doc],
  doc: Doc,
  spec: MergeStage,
  letStage: Aggregator | undefined,
  cmd: Doc,
  checks: DocumentChecks,
): void {
  let after: Doc;
  let description: UpdateDescription | undefined;
  if (spec.whenMatched === 'keepExisting') return;
  if (Array.isArray(spec.whenMatched)) {
    after = runUpdatePipeline(before, spec.whenMatched, letStage!, doc);
    description = describeChange(before, after);
  } else {
    const outcome = applyUpdate(before, spec.whenMatched === 'replace' ? doc : { $set: doc }, {});
    if (!outcome.modified) return;
    after = outcome.doc;
    description = outcome.description;
  }
  if (description && Object.keys(description.updatedFields).length === 0 && description.removedFields.length === 0) return;
  checks.checkSize(after, 'update');
  validateWrite(coll, after, before, cmd);
  engine.replace(coll, rid, after, description);
}

/** The `let` of a pipeline $merge, evaluated against each result document; `new` is the document itself. */
function letVariables(spec: Doc | undefined): Aggregator {
  return new Aggregator([{ $replaceWith: { ...spec, new: '$$ROOT' } }]);
}

/** A whenMatched pipeline applied to the stored document, as a pipeline update: _id may not change. */
function runUpdatePipeline(before: Doc, pipeline: Doc[], letStage: Aggregator, result: Doc): Doc {
  const [variables] = letStage.run([result]) as Doc[];
  const [out] = new Aggregator(pipeline, { variables }).run([deepCopy(before)]) as Doc[];
  if (out._id !== undefined && compareValues(out._id, before._id) !== 0) {
    throw new MongoError(66, "After applying the update, the (immutable) field '_id' was found to have been altered", 'ImmutableField');
  }
  const { _id, ...rest } = out;
  return { _id: before._id, ...rest };
}

/** mongod's context on a $merge write error: the code stays, the message says which part of $merge failed. */
function mergeContext(e: unknown, spec: MergeStage): unknown {
  if (!(e instanceof MongoError)) return e;
  let context: string | undefined;
  if (e.code === 66) context = '$merge failed to update the matching document, did you attempt to modify the _id or the shard key?';
  if (e.code === 11000) {
    const keyFields = Object.keys((e.extra.keyPattern as Doc | undefined) ?? {});
    const onFields = keyFields.length === spec.on.length && keyFields.every((field) => spec.on.includes(field));
    context =
      spec.whenMatched === 'fail' && onFields
        ? "$merge with whenMatched: fail found an existing document with the same values for the 'on' fields"
        : '$merge failed due to a DuplicateKey error';
  }
  return context ? new MongoError(e.code, `${context} :: caused by :: ${e.message}`, e.codeName, e.extra) : e;
}
