// $jsonSchema: MongoDB's subset of JSON Schema draft 4 with BSON types
// (https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/). A schema is parsed once
// into rules, refusing what mongod refuses with its codes and texts (its parser is
// src/mongo/db/matcher/schema/json_schema_parser.cpp); the rules then test values, and explain a
// failure in the shape of mongod's `errInfo.details` for DocumentValidationFailure.
import { bsonTypeName, canonicalKey, compareValues, isPlainObject, toNumber, type Doc } from './bson-order.js';
import { MongoError } from './errors.js';

export type CompiledSchema = {
  test(value: unknown): boolean;
  /** The rules `value` breaks, as mongod lists them in `schemaRulesNotSatisfied`. */
  explain(value: unknown): Doc[];
};

type Rule = { test(v: unknown): boolean; explain(v: unknown): Doc };

// Keywords mongod names as unsupported rather than unknown.
const UNSUPPORTED = new Set(['$ref', '$schema', 'default', 'definitions', 'format', 'id']);
const KEYWORDS = new Set([
  'additionalItems', 'additionalProperties', 'allOf', 'anyOf', 'bsonType', 'dependencies', 'description', 'encrypt',
  'encryptMetadata', 'enum', 'exclusiveMaximum', 'exclusiveMinimum', 'items', 'maxItems', 'maxLength', 'maxProperties',
  'maximum', 'minItems', 'minLength', 'minProperties', 'minimum', 'multipleOf', 'not', 'oneOf', 'pattern',
  'patternProperties', 'properties', 'required', 'title', 'type', 'uniqueItems',
]);

// bsonType takes $type's aliases (https://www.mongodb.com/docs/manual/reference/bson-types/); type takes
// JSON Schema's, without 'integer'. Both accept 'number' for the four numeric types.
const BSON_TYPE_ALIASES = new Set([
  'double', 'string', 'object', 'array', 'binData', 'undefined', 'objectId', 'bool', 'date', 'null', 'regex', 'dbPointer',
  'javascript', 'symbol', 'javascriptWithScope', 'int', 'timestamp', 'long', 'decimal', 'minKey', 'maxKey',
]);
const JSON_TYPE_ALIASES: Record<string, string> = { array: 'array', boolean: 'bool', null: 'null', object: 'object', string: 'string' };
const NUMERIC = new Set(['int', 'long', 'double', 'decimal']);

const isNumber = (v: unknown): boolean => NUMERIC.has(bsonTypeName(v));
const isObject = (v: unknown): v is Doc => bsonTypeName(v) === 'object';

const failedToParse = (msg: string): MongoError => new MongoError(9, msg, 'FailedToParse');
const typeMismatch = (msg: string): MongoError => new MongoError(14, msg, 'TypeMismatch');

/** Equality as $jsonSchema's enum and uniqueItems see it: numbers by value, object fields in any order. */
function unorderedKey(v: unknown): string {
  if (Array.isArray(v)) return '[' + v.map(unorderedKey).join(',') + ']';
  if (isPlainObject(v)) {
    return '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + unorderedKey(v[k])).join(',') + '}';
  }
  return canonicalKey(v);
}

/** mongod's parseIntegerElementToNonNegativeLong, with its messages. */
function nonNegativeInteger(keyword: string, x: unknown): number {
  const shown = `${keyword}: ${typeof x === 'string' ? JSON.stringify(x) : String(x)}`;
  if (!isNumber(x)) throw failedToParse(`Expected a number in: ${shown}`);
  const n = toNumber(x);
  if (Number.isNaN(n)) throw failedToParse(`Expected an integer, but found NaN in: ${shown}`);
  if (!Number.isInteger(n)) throw failedToParse(`Expected an integer: ${shown}`);
  if (n < 0) throw failedToParse(`Expected a positive number in: ${shown}`);
  return n;
}

function parseTypes(keyword: 'type' | 'bsonType', x: unknown): Set<string> {
  if (typeof x !== 'string' && !Array.isArray(x)) {
    throw typeMismatch(`$jsonSchema keyword '${keyword}' must be either a string or an array of strings`);
  }
  const aliases = typeof x === 'string' ? [x] : x;
  const seen = new Set<string>();
  for (const a of aliases) {
    if (typeof a !== 'string') throw typeMismatch(`$jsonSchema keyword '${keyword}' array elements must be strings`);
    if (keyword === 'type' && a === 'integer') throw failedToParse("$jsonSchema type 'integer' is not currently supported.");
    if (seen.has(a)) throw failedToParse(`$jsonSchema keyword '${keyword}' has duplicate value: ${a}`);
    seen.add(a);
  }
  const names = new Set<string>();
  let numbers = false;
  for (const a of [...seen].sort()) {
    if (a === 'number') numbers = true;
    else if (keyword === 'bsonType' && BSON_TYPE_ALIASES.has(a)) names.add(a);
    else if (keyword === 'type' && a in JSON_TYPE_ALIASES) names.add(JSON_TYPE_ALIASES[a]);
    else throw new MongoError(2, `Unknown type name alias: ${a}`, 'BadValue');
  }
  if (names.size === 0 && !numbers) throw failedToParse(`$jsonSchema keyword '${keyword}' must name at least one type`);
  if (numbers) for (const n of NUMERIC) names.add(n);
  return names;
}

/** A rule that applies only to values of one kind (JSON Schema: other types and missing fields pass). */
function restricted(applies: (v: unknown) => boolean, holds: (v: any) => boolean, explain: (v: any) => Doc): Rule {
  return { test: (v) => !applies(v) || holds(v), explain };
}

function comparisonDetail(operatorName: string, specifiedAs: Doc, reason: string): (v: unknown) => Doc {
  return (v: unknown): Doc => ({ operatorName, specifiedAs, reason, consideredValue: v });
}

/** Exact decimal value of a number as mongod's fmod sees it: a double through its 15-digit decimal form. */
function toDecimal(v: unknown): { digits: bigint; scale: number } | undefined {
  let text: string;
  if (typeof v === 'number' || (v as any)?._bsontype === 'Double' || (v as any)?._bsontype === 'Int32') {
    const n = toNumber(v);
    if (!Number.isFinite(n)) return undefined;
    text = Number.isInteger(n) && Math.abs(n) < 2 ** 53 ? String(n) : n.toPrecision(15);
  } else {
    text = String(v);
  }
  const m = /^(-?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!m) return undefined;
  const frac = m[3] ?? '';
  let scale = frac.length - Number(m[4] ?? 0);
  let digits = BigInt(m[1] + ((m[2] ?? '') + frac || '0'));
  if (scale < 0) {
    digits *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { digits, scale };
}

function isMultipleOf(v: unknown, divisor: { digits: bigint; scale: number }): boolean {
  const x = toDecimal(v);
  if (!x) return false;
  const scale = Math.max(x.scale, divisor.scale);
  const a = x.digits * 10n ** BigInt(scale - x.scale);
  const b = divisor.digits * 10n ** BigInt(scale - divisor.scale);
  return a % b === 0n;
}

function compileRegex(source: string): RegExp {
  try {
    return new RegExp(source);
  } catch (e) {
    throw new MongoError(51091, `Regular expression is invalid: ${(e as Error).message}`, 'Location51091');
  }
}

function subschemas(keyword: string, x: unknown): CompiledSchema[] {
  if (!Array.isArray(x)) throw typeMismatch(`$jsonSchema keyword '${keyword}' must be an array`);
  if (x.length === 0) throw new MongoError(2, `$jsonSchema keyword '${keyword}' must be a non-empty array`, 'BadValue');
  return x.map((s) => {
    if (!isPlainObject(s)) throw typeMismatch(`$jsonSchema keyword '${keyword}' must be an array of objects, but found an element of type ${bsonTypeName(s)}`);
    return compileSchema(s);
  });
}

/** Parses one (sub)schema; refuses it with mongod's error when mongod would. */
export function compileSchema(schema: Doc): CompiledSchema {
  for (const k of Object.keys(schema)) {
    if (KEYWORDS.has(k)) continue;
    if (UNSUPPORTED.has(k)) throw failedToParse(`$jsonSchema keyword '${k}' is not currently supported`);
    throw failedToParse(`Unknown $jsonSchema keyword: ${k}`);
  }
  const s = schema;
  for (const k of ['description', 'title']) {
    if (s[k] !== undefined && typeof s[k] !== 'string') throw typeMismatch(`$jsonSchema keyword '${k}' must be of type string`);
  }
  if (s.type !== undefined && s.bsonType !== undefined) throw failedToParse("Cannot specify both $jsonSchema keywords 'type' and 'bsonType'");
  for (const k of ['type', 'bsonType']) {
    if (s[k] !== undefined && s.encrypt !== undefined) {
      throw failedToParse(`$jsonSchema keyword 'encrypt' cannot be used in conjunction with '${k}', 'encrypt' implies type 'bsonType::BinData'`);
    }
  }
  const rules: Rule[] = [];
  const typeKeyword = s.type !== undefined ? 'type' : s.bsonType !== undefined ? 'bsonType' : undefined;
  if (typeKeyword) {
    const names = parseTypes(typeKeyword, s[typeKeyword]);
    rules.push({
      test: (v) => names.has(bsonTypeName(v)),
      explain: (v) => ({ operatorName: typeKeyword, specifiedAs: { [typeKeyword]: s[typeKeyword] }, reason: 'type did not match', consideredValue: v, consideredType: bsonTypeName(v) }),
    });
  }
  scalarRules(s, rules);
  arrayRules(s, rules);
  encryptRules(s, rules);
  objectRules(s, rules);
  logicalRules(s, rules);
  return {
    test: (v) => {
      for (const r of rules) if (!r.test(v)) return false;
      return true;
    },
    explain: (v) => rules.filter((r) => !r.test(v)).map((r) => r.explain(v)),
  };
}

function scalarRules(s: Doc, rules: Rule[]): void {
  const isString = (v: unknown): boolean => typeof v === 'string';
  if (s.pattern !== undefined) {
    if (typeof s.pattern !== 'string') throw typeMismatch("$jsonSchema keyword 'pattern' must be a string");
    const re = compileRegex(s.pattern);
    rules.push(restricted(isString, (v: string) => re.test(v), comparisonDetail('pattern', { pattern: s.pattern }, 'regular expression did not match')));
  }
  // Lengths count code points, as mongod does.
  const length = (v: string): number => {
    let n = 0;
    for (const _ of v) n++;
    return n;
  };
  if (s.maxLength !== undefined) {
    const max = nonNegativeInteger('maxLength', s.maxLength);
    rules.push(restricted(isString, (v: string) => length(v) <= max, comparisonDetail('maxLength', { maxLength: s.maxLength }, 'specified string length was not satisfied')));
  }
  if (s.minLength !== undefined) {
    const min = nonNegativeInteger('minLength', s.minLength);
    rules.push(restricted(isString, (v: string) => length(v) >= min, comparisonDetail('minLength', { minLength: s.minLength }, 'specified string length was not satisfied')));
  }
  if (s.multipleOf !== undefined) {
    if (!isNumber(s.multipleOf)) throw typeMismatch("$jsonSchema keyword 'multipleOf' must be a number");
    const divisor = toDecimal(s.multipleOf);
    if (!divisor || divisor.digits <= 0n) throw failedToParse("$jsonSchema keyword 'multipleOf' must have a positive value");
    rules.push(restricted(isNumber, (v) => isMultipleOf(v, divisor), comparisonDetail('multipleOf', { multipleOf: s.multipleOf }, 'considered value is not a multiple of the specified value')));
  }
  for (const [bound, exclusive, sign] of [['maximum', 'exclusiveMaximum', 1], ['minimum', 'exclusiveMinimum', -1]] as const) {
    if (s[bound] === undefined) {
      if (s[exclusive] !== undefined) throw failedToParse(`$jsonSchema keyword '${bound}' must be a present if ${exclusive} is present`);
      continue;
    }
    if (s[exclusive] !== undefined && typeof s[exclusive] !== 'boolean') throw typeMismatch(`$jsonSchema keyword '${exclusive}' must be a boolean`);
    if (!isNumber(s[bound])) throw typeMismatch(`$jsonSchema keyword '${bound}' must be a number`);
    const limit = s[bound];
    const strict = s[exclusive] === true;
    const specifiedAs = strict ? { [bound]: limit, [exclusive]: true } : { [bound]: limit };
    // A NaN value passes no bound: match expressions compare NaN as false.
    const holds = (v: unknown): boolean => {
      if (Number.isNaN(toNumber(v))) return false;
      const c = compareValues(v, limit) * sign;
      return strict ? c < 0 : c <= 0;
    };
    rules.push(restricted(isNumber, holds, comparisonDetail(bound, specifiedAs, 'comparison failed')));
  }
}

function arrayRules(s: Doc, rules: Rule[]): void {
  const isArray = Array.isArray;
  if (s.minItems !== undefined) {
    const min = nonNegativeInteger('minItems', s.minItems);
    rules.push(restricted(isArray, (v: unknown[]) => v.length >= min, comparisonDetail('minItems', { minItems: s.minItems }, 'array did not match specified length')));
  }
  if (s.maxItems !== undefined) {
    const max = nonNegativeInteger('maxItems', s.maxItems);
    rules.push(restricted(isArray, (v: unknown[]) => v.length <= max, comparisonDetail('maxItems', { maxItems: s.maxItems }, 'array did not match specified length')));
  }
  if (s.uniqueItems !== undefined) {
    if (typeof s.uniqueItems !== 'boolean') throw typeMismatch("$jsonSchema keyword 'uniqueItems' must be a boolean");
    if (s.uniqueItems) {
      const duplicate = (v: unknown[]): unknown => {
        const seen = new Set<string>();
        for (const el of v) {
          const k = unorderedKey(el);
          if (seen.has(k)) return el;
          seen.add(k);
        }
        return undefined;
      };
      rules.push(
        restricted(isArray, (v: unknown[]) => new Set(v.map(unorderedKey)).size === v.length, (v: unknown[]) => ({
          operatorName: 'uniqueItems',
          specifiedAs: { uniqueItems: true },
          reason: 'found a duplicate item',
          consideredValue: v,
          duplicatedValue: duplicate(v),
        })),
      );
    }
  }
  let additionalFrom: number | undefined;
  if (s.items !== undefined) {
    if (Array.isArray(s.items)) {
      const each = s.items.map((sub) => {
        if (!isPlainObject(sub)) throw typeMismatch(`$jsonSchema keyword 'items' requires that each element of the array is an object, but found a ${bsonTypeName(sub)}`);
        return compileSchema(sub);
      });
      additionalFrom = each.length;
      const failing = (v: unknown[]): number => each.findIndex((sub, i) => i < v.length && !sub.test(v[i]));
      rules.push(
        restricted(isArray, (v: unknown[]) => failing(v) < 0, (v: unknown[]) => {
          const i = failing(v);
          return { operatorName: 'items', details: [{ itemIndex: i, details: each[i].explain(v[i]) }] };
        }),
      );
    } else if (isPlainObject(s.items)) {
      const sub = compileSchema(s.items);
      rules.push(
        restricted(isArray, (v: unknown[]) => v.every((el) => sub.test(el)), (v: unknown[]) => {
          const i = v.findIndex((el) => !sub.test(el));
          return { operatorName: 'items', reason: 'At least one item did not match the sub-schema', itemIndex: i, details: sub.explain(v[i]) };
        }),
      );
    } else {
      throw typeMismatch(`$jsonSchema keyword 'items' must be an array or an object, not ${bsonTypeName(s.items)}`);
    }
  }
  if (s.additionalItems !== undefined) {
    const extra = s.additionalItems;
    if (typeof extra !== 'boolean' && !isPlainObject(extra)) {
      throw typeMismatch(`$jsonSchema keyword 'additionalItems' must be either an object or a boolean, but got a ${bsonTypeName(extra)}`);
    }
    const sub = isPlainObject(extra) ? compileSchema(extra) : undefined;
    // additionalItems only means something after an array of item schemas.
    if (additionalFrom !== undefined) {
      const from = additionalFrom;
      const ok = (el: unknown): boolean => (sub ? sub.test(el) : extra === true);
      rules.push(
        restricted(isArray, (v: unknown[]) => v.slice(from).every(ok), (v: unknown[]) => {
          const i = from + v.slice(from).findIndex((el) => !ok(el));
          return sub
            ? { operatorName: 'additionalItems', reason: 'At least one additional item did not match the sub-schema', itemIndex: i, details: sub.explain(v[i]) }
            : { operatorName: 'additionalItems', specifiedAs: { additionalItems: false }, reason: 'found additional items', additionalItems: v.slice(from) };
        }),
      );
    }
  }
}

const ENCRYPT_FIELDS = new Set(['keyId', 'algorithm', 'bsonType']);

/**
 * encrypt marks a field that Client-Side Field Level Encryption stores as BinData subtype 6; mongod
 * checks only that subtype, which is all a server without the keys can check.
 */
function encryptRules(s: Doc, rules: Rule[]): void {
  if (s.encrypt !== undefined && s.encryptMetadata !== undefined) throw failedToParse("Cannot specify both $jsonSchema keywords 'encrypt' and 'encryptMetadata'");
  if (s.encryptMetadata !== undefined) {
    if (!isPlainObject(s.encryptMetadata)) throw typeMismatch("$jsonSchema keyword 'encryptMetadata' must be an object ");
    if (Object.keys(s.encryptMetadata).length === 0) throw failedToParse("$jsonSchema keyword 'encryptMetadata' cannot be an empty object ");
  }
  if (s.encrypt === undefined) return;
  if (!isPlainObject(s.encrypt)) throw typeMismatch("$jsonSchema keyword 'encrypt' must be an object ");
  for (const k of Object.keys(s.encrypt)) {
    if (!ENCRYPT_FIELDS.has(k)) throw new MongoError(40415, `BSON field 'encrypt.${k}' is an unknown field.`, 'Location40415');
  }
  rules.push({
    test: (v) => bsonTypeName(v) === 'binData' && (v as { sub_type: number }).sub_type === 6,
    explain: (v) => ({ operatorName: 'encrypt', reason: 'value was not encrypted', consideredValue: v }),
  });
}

function objectRules(s: Doc, rules: Rule[]): void {
  let required: string[] = [];
  if (s.required !== undefined) {
    if (!Array.isArray(s.required)) throw typeMismatch(`$jsonSchema keyword 'required' must be an array, but found an element of type ${bsonTypeName(s.required)}`);
    for (const name of s.required) {
      if (typeof name !== 'string') throw typeMismatch(`$jsonSchema keyword 'required' must be an array of strings, but found an element of type: ${bsonTypeName(name)}`);
    }
    if (s.required.length === 0) throw failedToParse("$jsonSchema keyword 'required' cannot be an empty array");
    if (new Set(s.required).size !== s.required.length) throw failedToParse("$jsonSchema keyword 'required' array cannot contain duplicate values");
    required = s.required;
  }
  const properties = new Map<string, CompiledSchema>();
  if (s.properties !== undefined) {
    if (!isPlainObject(s.properties)) throw typeMismatch("$jsonSchema keyword 'properties' must be an object");
    for (const [name, sub] of Object.entries(s.properties)) {
      if (!isPlainObject(sub)) throw typeMismatch(`Nested schema for $jsonSchema property '${name}' must be an object`);
      properties.set(name, compileSchema(sub));
    }
    const failing = (v: Doc): string[] => [...properties].filter(([name, sub]) => v[name] !== undefined && !sub.test(v[name])).map(([name]) => name);
    rules.push(
      restricted(isObject, (v: Doc) => failing(v).length === 0, (v: Doc) => ({
        operatorName: 'properties',
        propertiesNotSatisfied: failing(v).map((name) => {
          const sub = s.properties[name] as Doc;
          return {
            propertyName: name,
            ...(sub.title !== undefined && { title: sub.title }),
            ...(sub.description !== undefined && { description: sub.description }),
            details: properties.get(name)!.explain(v[name]),
          };
        }),
      })),
    );
  }
  if (s.patternProperties !== undefined || s.additionalProperties !== undefined) {
    allowedProperties(s, properties, rules);
  }
  if (required.length > 0) {
    const missing = (v: Doc): string[] => required.filter((name) => v[name] === undefined);
    rules.push(restricted(isObject, (v: Doc) => missing(v).length === 0, (v: Doc) => ({ operatorName: 'required', specifiedAs: { required: s.required }, missingProperties: missing(v) })));
  }
  for (const [keyword, sign] of [['minProperties', -1], ['maxProperties', 1]] as const) {
    if (s[keyword] === undefined) continue;
    const limit = nonNegativeInteger(keyword, s[keyword]);
    const holds = (v: Doc): boolean => (Object.keys(v).length - limit) * sign <= 0;
    rules.push(
      restricted(isObject, holds, (v: Doc) => ({
        operatorName: keyword,
        specifiedAs: { [keyword]: s[keyword] },
        reason: 'specified number of properties was not satisfied',
        numberOfProperties: Object.keys(v).length,
      })),
    );
  }
  if (s.dependencies !== undefined) dependencies(s.dependencies, rules);
}

function allowedProperties(s: Doc, properties: Map<string, CompiledSchema>, rules: Rule[]): void {
  const patterns: Array<{ source: string; re: RegExp; schema: CompiledSchema }> = [];
  if (s.patternProperties !== undefined) {
    if (!isPlainObject(s.patternProperties)) throw typeMismatch("$jsonSchema keyword 'patternProperties' must be an object");
    for (const [source, sub] of Object.entries(s.patternProperties)) {
      if (!isPlainObject(sub)) throw typeMismatch(`$jsonSchema keyword 'patternProperties' has property '${source}' which is not an object`);
      patterns.push({ source, re: compileRegex(source), schema: compileSchema(sub) });
    }
  }
  const extra = s.additionalProperties;
  if (extra !== undefined && typeof extra !== 'boolean' && !isPlainObject(extra)) {
    throw typeMismatch("$jsonSchema keyword 'additionalProperties' must be an object or a boolean");
  }
  const otherwise = isPlainObject(extra) ? compileSchema(extra) : undefined;
  // Each field: the schemas of the patterns its name matches; a field neither listed in properties
  // nor matched by a pattern must satisfy additionalProperties.
  const failures = (v: Doc, stopAtFirst: boolean): Doc[] => {
    const out: Doc[] = [];
    for (const [name, value] of Object.entries(v)) {
      let matched = false;
      for (const p of patterns) {
        if (!p.re.test(name)) continue;
        matched = true;
        if (!p.schema.test(value)) {
          out.push({ operatorName: 'patternProperties', details: [{ propertyName: name, regexMatched: p.source, details: p.schema.explain(value) }] });
          if (stopAtFirst) return out;
        }
      }
      if (matched || properties.has(name)) continue;
      if (otherwise ? !otherwise.test(value) : extra === false) {
        out.push(
          otherwise
            ? { operatorName: 'additionalProperties', reason: 'at least one additional property did not match the subschema', failingProperty: name, details: otherwise.explain(value) }
            : { operatorName: 'additionalProperties', specifiedAs: { additionalProperties: false }, additionalProperties: [name] },
        );
        if (stopAtFirst) return out;
      }
    }
    return out;
  };
  rules.push(
    restricted(isObject, (v: Doc) => failures(v, true).length === 0, (v: Doc) => {
      const all = failures(v, false);
      const names = all.flatMap((f) => (Array.isArray(f.additionalProperties) ? f.additionalProperties : []));
      // Several fields refused by additionalProperties: false are reported together, as mongod does.
      if (names.length > 1) return { operatorName: 'additionalProperties', specifiedAs: { additionalProperties: false }, additionalProperties: names };
      return all[0];
    }),
  );
}

function dependencies(deps: unknown, rules: Rule[]): void {
  if (!isPlainObject(deps)) throw typeMismatch("$jsonSchema keyword 'dependencies' must be an object");
  for (const [name, dep] of Object.entries(deps)) {
    if (Array.isArray(dep)) {
      if (dep.length === 0) throw failedToParse(`property '${name}' in $jsonSchema keyword 'dependencies' cannot be an empty array`);
      const seen = new Set<string>();
      for (const p of dep) {
        if (typeof p !== 'string') throw typeMismatch(`array '${name}' in $jsonSchema keyword 'dependencies' can only contain strings, but found element of type: ${bsonTypeName(p)}`);
        if (seen.has(p)) throw failedToParse(`array '${name}' in $jsonSchema keyword 'dependencies' contains duplicate element: ${p}`);
        seen.add(p);
      }
      const missing = (v: Doc): string[] => dep.filter((p: string) => v[p] === undefined);
      rules.push(
        restricted(isObject, (v: Doc) => v[name] === undefined || missing(v).length === 0, (v: Doc) => ({
          operatorName: 'dependencies',
          failingDependencies: [{ conditionalProperty: name, missingProperties: missing(v) }],
        })),
      );
    } else if (isPlainObject(dep)) {
      const sub = compileSchema(dep);
      rules.push(
        restricted(isObject, (v: Doc) => v[name] === undefined || sub.test(v), (v: Doc) => ({
          operatorName: 'dependencies',
          failingDependencies: [{ conditionalProperty: name, details: sub.explain(v) }],
        })),
      );
    } else {
      throw typeMismatch(`property '${name}' in $jsonSchema keyword 'dependencies' must be either an object or an array`);
    }
  }
}

function logicalRules(s: Doc, rules: Rule[]): void {
  const notSatisfied = (subs: CompiledSchema[], v: unknown): Doc[] =>
    subs.flatMap((sub, index) => (sub.test(v) ? [] : [{ index, details: sub.explain(v) }]));
  if (s.allOf !== undefined) {
    const subs = subschemas('allOf', s.allOf);
    rules.push({ test: (v) => subs.every((sub) => sub.test(v)), explain: (v) => ({ operatorName: 'allOf', schemasNotSatisfied: notSatisfied(subs, v) }) });
  }
  if (s.anyOf !== undefined) {
    const subs = subschemas('anyOf', s.anyOf);
    rules.push({ test: (v) => subs.some((sub) => sub.test(v)), explain: (v) => ({ operatorName: 'anyOf', schemasNotSatisfied: notSatisfied(subs, v) }) });
  }
  if (s.oneOf !== undefined) {
    const subs = subschemas('oneOf', s.oneOf);
    const matching = (v: unknown): number[] => subs.flatMap((sub, i) => (sub.test(v) ? [i] : []));
    rules.push({
      test: (v) => matching(v).length === 1,
      explain: (v) => {
        const m = matching(v);
        return m.length === 0
          ? { operatorName: 'oneOf', schemasNotSatisfied: notSatisfied(subs, v) }
          : { operatorName: 'oneOf', reason: 'more than one subschema matched', matchingSchemaIndexes: m };
      },
    });
  }
  if (s.not !== undefined) {
    if (!isPlainObject(s.not)) throw typeMismatch(`$jsonSchema keyword 'not' must be an object, but found an element of type ${bsonTypeName(s.not)}`);
    const sub = compileSchema(s.not);
    rules.push({ test: (v) => !sub.test(v), explain: () => ({ operatorName: 'not', reason: 'child expression matched' }) });
  }
  if (s.enum !== undefined) {
    if (!Array.isArray(s.enum)) throw typeMismatch(`$jsonSchema keyword 'enum' must be an array, but found an element of type ${bsonTypeName(s.enum)}`);
    if (s.enum.length === 0) throw failedToParse("$jsonSchema keyword 'enum' cannot be an empty array");
    const keys = new Set(s.enum.map(unorderedKey));
    if (keys.size !== s.enum.length) throw failedToParse("$jsonSchema keyword 'enum' array cannot contain duplicate values.");
    rules.push({ test: (v) => keys.has(unorderedKey(v)), explain: comparisonDetail('enum', { enum: s.enum }, 'value was not found in enum') });
  }
}

/** Whether a schema, or any schema nested in it, uses the encryption keywords. */
export function usesEncryption(schema: Doc): boolean {
  if (schema.encrypt !== undefined || schema.encryptMetadata !== undefined) return true;
  const nested: unknown[] = [schema.additionalItems, schema.additionalProperties, schema.not];
  for (const k of ['properties', 'patternProperties', 'dependencies']) if (isPlainObject(schema[k])) nested.push(...Object.values(schema[k]));
  for (const k of ['items', 'allOf', 'anyOf', 'oneOf']) nested.push(...(Array.isArray(schema[k]) ? schema[k] : [schema[k]]));
  return nested.some((sub) => isPlainObject(sub) && usesEncryption(sub));
}

/** The $jsonSchema query operator's argument, parsed; mongod's error when the argument is not a schema. */
export function compileJsonSchema(schema: unknown): CompiledSchema {
  if (!isPlainObject(schema)) throw typeMismatch('$jsonSchema must be an object');
  return compileSchema(schema);
}
