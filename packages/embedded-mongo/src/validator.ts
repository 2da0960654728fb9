// Collection validators (https://www.mongodb.com/docs/manual/core/schema-validation/): a query filter,
// $jsonSchema and/or ordinary operators, set by `create` with validationLevel and validationAction.
// Writes that break it fail with DocumentValidationFailure (121) and mongod 5+'s errInfo, or are only
// logged under validationAction 'warn'.
import { EJSON } from 'bson';
import { isPlainObject, type Doc, type StringCompare } from './bson-order.js';
import { collatorFor } from './collation.js';
import type { Collection } from './collection.js';
import { MongoError, wrongFieldType } from './errors.js';
import { compileJsonSchema, usesEncryption } from './json-schema.js';
import { compileFilter, getPath, type Predicate } from './matcher.js';

type CollectionValidator = {
  level: 'strict' | 'moderate';
  action: 'error' | 'warn';
  matches: Predicate;
  filter: Doc;
  /** The collection's default collation, which the validator's query operators compare strings by. */
  strings: StringCompare | undefined;
};

const LEVELS = ['off', 'strict', 'moderate'];
const ACTIONS = ['error', 'warn'];
// Operators a validator may not use: they need an index, a script engine or a sort by distance.
const BANNED: Record<string, string> = {
  $where: '$where is not allowed in this context',
  $text: '$text is not allowed in this context',
  $near: '$geoNear, $near, and $nearSphere are not allowed in this context',
  $nearSphere: '$geoNear, $near, and $nearSphere are not allowed in this context',
  $geoNear: '$geoNear, $near, and $nearSphere are not allowed in this context',
};

function checkEnum(field: string, v: unknown, allowed: string[]): void {
  if (v === undefined) return;
  if (typeof v !== 'string') throw wrongFieldType(`create.${field}`, v, 'string');
  if (!allowed.includes(v)) throw new MongoError(2, `Enumeration value '${v}' for field 'create.${field}' is not a valid value.`, 'BadValue');
}

/**
 * An operator the validator may not use; with `plaintextLogged` (validationAction 'warn' or level
 * 'moderate', which can leave unencrypted values in the log or the collection), encryption keywords too.
 */
function findBanned(filter: Doc, plaintextLogged: boolean): MongoError | undefined {
  for (const [key, cond] of Object.entries(filter)) {
    if (BANNED[key]) return new MongoError(2, BANNED[key], 'BadValue');
    if (key === '$jsonSchema' && plaintextLogged && isPlainObject(cond) && usesEncryption(cond)) {
      return new MongoError(224, 'Encryption-related validator keywords are not allowed in this context', 'QueryFeatureNotAllowed');
    }
    if ((key === '$and' || key === '$or' || key === '$nor') && Array.isArray(cond)) {
      for (const sub of cond) {
        const found = isPlainObject(sub) ? findBanned(sub, plaintextLogged) : undefined;
        if (found) return found;
      }
    } else if (!key.startsWith('$') && isPlainObject(cond)) {
      const op = Object.keys(cond).find((k) => BANNED[k]);
      if (op) return new MongoError(2, BANNED[op], 'BadValue');
    }
  }
  return undefined;
}

/**
 * The validator a collection's create options define (undefined when there is none or validationLevel
 * is 'off'); refuses bad options with mongod's errors, so `create` stores only what it can enforce.
 */
export function parseValidator(options: Doc): CollectionValidator | undefined {
  const { validator, validationLevel, validationAction } = options;
  if (validator !== undefined && !isPlainObject(validator)) throw wrongFieldType('create.validator', validator, 'object');
  checkEnum('validationLevel', validationLevel, LEVELS);
  checkEnum('validationAction', validationAction, ACTIONS);
  if (validator === undefined || Object.keys(validator).length === 0) return undefined;
  const strings = options.collation === undefined ? undefined : collatorFor(options.collation)?.compare;
  let matches: Predicate;
  try {
    const banned = findBanned(validator, validationAction === 'warn' || validationLevel === 'moderate');
    if (banned) throw banned;
    matches = compileFilter(validator, strings);
  } catch (e) {
    if (!(e instanceof MongoError)) throw e;
    throw new MongoError(e.code, `Parsing of collection validator failed :: caused by :: ${e.message}`, e.codeName, e.extra);
  }
  if (validationLevel === 'off') return undefined;
  return { level: validationLevel === 'moderate' ? 'moderate' : 'strict', action: validationAction === 'warn' ? 'warn' : 'error', matches, filter: validator, strings };
}

// Parsed once per collection; null for the (common) collection without a validator.
const parsed = new WeakMap<Collection, CollectionValidator | null>();

function validatorOf(coll: Collection): CollectionValidator | undefined {
  let v = parsed.get(coll);
  if (v === undefined) {
    v = parseValidator(coll.options) ?? null;
    parsed.set(coll, v);
  }
  return v ?? undefined;
}

/**
 * Applies the collection's validator to a document about to be written. `before` is the stored
 * document an update replaces (undefined for inserts and upserts): under 'moderate', a document that
 * already failed validation may go on failing it.
 */
export function validateWrite(coll: Collection, doc: Doc, before: Doc | undefined, cmd: Doc): void {
  const v = validatorOf(coll);
  if (!v || cmd.bypassDocumentValidation === true || v.matches(doc)) return;
  if (before !== undefined && v.level === 'moderate' && !v.matches(before)) return;
  const errInfo = { failingDocumentId: doc._id, details: explainFilter(v.filter, doc, v.strings) };
  if (v.action === 'warn') {
    console.warn(`[embedded-mongo] Document would fail validation ${EJSON.stringify({ namespace: coll.ns, document: { _id: doc._id }, errInfo }, { relaxed: true })}`);
    return;
  }
  throw new MongoError(121, 'Document failed validation', 'DocumentValidationFailure', { errInfo });
}

const REASONS: Record<string, string> = {
  $eq: 'comparison failed', $ne: 'comparison failed', $gt: 'comparison failed', $gte: 'comparison failed', $lt: 'comparison failed',
  $lte: 'comparison failed', $in: 'no matching value found in array', $nin: 'matching value found in array', $type: 'type did not match',
  $regex: 'regular expression did not match', $exists: 'path had value', $size: 'array length was not equal to given size',
};

/** Why `doc` fails `filter`, in the shape of mongod's errInfo.details (the failing clauses only). */
export function explainFilter(filter: Doc, doc: Doc, strings?: StringCompare): Doc {
  const clauses = Object.entries(filter);
  if (clauses.length === 1) return explainClause(clauses[0][0], clauses[0][1], doc, strings);
  return {
    operatorName: '$and',
    clausesNotSatisfied: clauses.flatMap(([key, cond], index) =>
      compileFilter({ [key]: cond }, strings)(doc) ? [] : [{ index, details: explainClause(key, cond, doc, strings) }],
    ),
  };
}

function explainClause(key: string, cond: any, doc: Doc, strings: StringCompare | undefined): Doc {
  if (key === '$jsonSchema') {
    return {
      operatorName: '$jsonSchema',
      ...(cond.title !== undefined && { title: cond.title }),
      ...(cond.description !== undefined && { description: cond.description }),
      schemaRulesNotSatisfied: compileJsonSchema(cond).explain(doc),
    };
  }
  if (key === '$and' || key === '$or') {
    const subs = cond as Doc[];
    return {
      operatorName: key,
      clausesNotSatisfied: subs.flatMap((sub, index) => (compileFilter(sub, strings)(doc) ? [] : [{ index, details: explainFilter(sub, doc, strings) }])),
    };
  }
  if (key === '$nor') return { operatorName: '$nor', specifiedAs: { $nor: cond }, reason: 'child expression matched' };
  if (key === '$expr') return { operatorName: '$expr', specifiedAs: { $expr: cond }, reason: 'expression did not match', expressionResult: false };
  const operatorName = isPlainObject(cond) && Object.keys(cond)[0]?.startsWith('$') ? Object.keys(cond)[0] : '$eq';
  const value = getPath(doc, key);
  const missing = value === undefined && operatorName !== '$exists';
  return {
    operatorName,
    specifiedAs: { [key]: cond },
    ...(missing ? { reason: 'field was missing' } : REASONS[operatorName] ? { reason: REASONS[operatorName] } : {}),
    ...(value !== undefined && { consideredValue: value }),
  };
}
