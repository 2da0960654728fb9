// The $jsonSchema keywords, one table row per case, against src/json-schema.ts directly. Values are
// decoded the way the server stores them: an Int32 is a JS number, an integral Double a Double, a Long
// a Long (see src/bson-order.ts numberType).
import { describe, expect, it } from 'vitest';
import { Binary, BSONRegExp, Code, Decimal128, Double, Long, MaxKey, MinKey, ObjectId, Timestamp } from 'bson';
import { compileJsonSchema } from '../src/json-schema.js';
import { MongoError } from '../src/errors.js';
import { explainFilter } from '../src/validator.js';

/** Whether `{v: value}` satisfies `{properties: {v: schema}}`: the schema applied to one field's value. */
const fieldMatches = (schema: object, value: unknown): boolean => compileJsonSchema({ properties: { v: schema } }).test({ v: value });

describe('bsonType and type', () => {
  // https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/#available-keywords and
  // https://www.mongodb.com/docs/manual/reference/bson-types/: bsonType takes $type's aliases (numbers
  // are exact: int, long, double, decimal; 'number' is any of them); type takes JSON types, where
  // 'number' is any numeric type and 'boolean' is bool.
  const rows: Array<{ schema: object; value: unknown; ok: boolean }> = [
    { schema: { bsonType: 'int' }, value: 5, ok: true },
    { schema: { bsonType: 'int' }, value: Long.fromNumber(5), ok: false },
    { schema: { bsonType: 'int' }, value: new Double(5), ok: false },
    { schema: { bsonType: 'long' }, value: Long.fromNumber(5), ok: true },
    { schema: { bsonType: 'long' }, value: 5, ok: false },
    { schema: { bsonType: 'double' }, value: 2.5, ok: true },
    { schema: { bsonType: 'double' }, value: new Double(2), ok: true },
    { schema: { bsonType: 'double' }, value: 2, ok: false },
    { schema: { bsonType: 'decimal' }, value: Decimal128.fromString('1.5'), ok: true },
    { schema: { bsonType: 'decimal' }, value: 1.5, ok: false },
    { schema: { bsonType: 'number' }, value: Decimal128.fromString('1'), ok: true },
    { schema: { bsonType: 'number' }, value: Long.fromNumber(1), ok: true },
    { schema: { bsonType: 'number' }, value: '1', ok: false },
    { schema: { bsonType: 'string' }, value: 'x', ok: true },
    { schema: { bsonType: 'string' }, value: ['x'], ok: false },
    { schema: { bsonType: 'object' }, value: { a: 1 }, ok: true },
    { schema: { bsonType: 'object' }, value: [], ok: false },
    { schema: { bsonType: 'array' }, value: [1], ok: true },
    { schema: { bsonType: 'binData' }, value: new Binary(Buffer.from('x')), ok: true },
    { schema: { bsonType: 'objectId' }, value: new ObjectId(), ok: true },
    { schema: { bsonType: 'objectId' }, value: '64b7f0c2a1b2c3d4e5f60718', ok: false },
    { schema: { bsonType: 'bool' }, value: false, ok: true },
    { schema: { bsonType: 'bool' }, value: 0, ok: false },
    { schema: { bsonType: 'date' }, value: new Date(0), ok: true },
    { schema: { bsonType: 'date' }, value: '1970-01-01', ok: false },
    { schema: { bsonType: 'null' }, value: null, ok: true },
    { schema: { bsonType: 'regex' }, value: /x/, ok: true },
    { schema: { bsonType: 'regex' }, value: new BSONRegExp('x', 'i'), ok: true },
    { schema: { bsonType: 'javascript' }, value: new Code('f()'), ok: true },
    { schema: { bsonType: 'timestamp' }, value: new Timestamp({ t: 1, i: 1 }), ok: true },
    { schema: { bsonType: 'minKey' }, value: new MinKey(), ok: true },
    { schema: { bsonType: 'maxKey' }, value: new MaxKey(), ok: true },
    { schema: { bsonType: ['string', 'null'] }, value: null, ok: true },
    { schema: { bsonType: ['string', 'null'] }, value: 1, ok: false },
    { schema: { type: 'number' }, value: Long.fromNumber(3), ok: true },
    { schema: { type: 'boolean' }, value: true, ok: true },
    { schema: { type: 'string' }, value: 1, ok: false },
    { schema: { type: ['array', 'object'] }, value: { a: [] }, ok: true },
    { schema: { type: 'null' }, value: null, ok: true },
  ];
  it.each(rows)('$schema on $value: $ok', ({ schema, value, ok }) => {
    expect(fieldMatches(schema, value)).toBe(ok);
  });

  it('a top-level type other than object matches no document', () => {
    expect(compileJsonSchema({ bsonType: 'object' }).test({ a: 1 })).toBe(true);
    expect(compileJsonSchema({ bsonType: 'string' }).test({ a: 1 })).toBe(false);
  });
});

describe('keywords', () => {
  // https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/: restriction keywords
  // apply only to values of their type (a number keyword passes a string), draft-4 exclusive bounds
  // are booleans, lengths count code points, and missing properties are only refused by required.
  const rows: Array<{ name: string; schema: object; value: unknown; ok: boolean }> = [
    { name: 'minimum holds', schema: { minimum: 3 }, value: 3, ok: true },
    { name: 'minimum fails', schema: { minimum: 3 }, value: 2.5, ok: false },
    { name: 'minimum of a Long', schema: { minimum: Long.fromString('9007199254740993') }, value: Long.fromString('9007199254740992'), ok: false },
    { name: 'minimum ignores strings', schema: { minimum: 3 }, value: 'a', ok: true },
    { name: 'exclusiveMinimum true refuses the bound', schema: { minimum: 3, exclusiveMinimum: true }, value: 3, ok: false },
    { name: 'exclusiveMinimum false allows the bound', schema: { minimum: 3, exclusiveMinimum: false }, value: 3, ok: true },
    { name: 'maximum fails', schema: { maximum: 10 }, value: Decimal128.fromString('10.5'), ok: false },
    { name: 'exclusiveMaximum', schema: { maximum: 10, exclusiveMaximum: true }, value: 10, ok: false },
    { name: 'NaN passes no bound', schema: { maximum: 10 }, value: Number.NaN, ok: false },
    { name: 'multipleOf', schema: { multipleOf: 3 }, value: 9, ok: true },
    { name: 'multipleOf fails', schema: { multipleOf: 3 }, value: 10, ok: false },
    { name: 'multipleOf in decimal, not binary, arithmetic', schema: { multipleOf: 0.1 }, value: 0.3, ok: true },
    { name: 'multipleOf of a Long', schema: { multipleOf: 2 }, value: Long.fromString('9007199254740993'), ok: false },
    { name: 'minLength counts code points', schema: { minLength: 2 }, value: '😀', ok: false },
    { name: 'maxLength counts code points', schema: { maxLength: 1 }, value: '😀', ok: true },
    { name: 'maxLength ignores numbers', schema: { maxLength: 1 }, value: 12345, ok: true },
    { name: 'pattern', schema: { pattern: '^a+$' }, value: 'aaa', ok: true },
    { name: 'pattern fails', schema: { pattern: '^a+$' }, value: 'ab', ok: false },
    { name: 'pattern is unanchored', schema: { pattern: 'b' }, value: 'abc', ok: true },
    { name: 'enum', schema: { enum: ['a', 1] }, value: 1, ok: true },
    { name: 'enum compares numbers by value', schema: { enum: [1] }, value: new Double(1), ok: true },
    { name: 'enum compares objects whatever their field order', schema: { enum: [{ a: 1, b: 2 }] }, value: { b: 2, a: 1 }, ok: true },
    { name: 'enum fails', schema: { enum: ['a', 'b'] }, value: 'c', ok: false },
    { name: 'enum does not look into arrays', schema: { enum: ['a'] }, value: ['a'], ok: false },
    { name: 'required', schema: { required: ['a'] }, value: { a: null }, ok: true },
    { name: 'required fails', schema: { required: ['a', 'b'] }, value: { a: 1 }, ok: false },
    { name: 'required ignores non-objects', schema: { required: ['a'] }, value: 'x', ok: true },
    { name: 'properties', schema: { properties: { a: { bsonType: 'int' } } }, value: { a: 1 }, ok: true },
    { name: 'properties fails', schema: { properties: { a: { bsonType: 'int' } } }, value: { a: 'x' }, ok: false },
    { name: 'properties skips missing fields', schema: { properties: { a: { bsonType: 'int' } } }, value: {}, ok: true },
    { name: 'additionalProperties false', schema: { properties: { a: {} }, additionalProperties: false }, value: { a: 1, b: 2 }, ok: false },
    { name: 'additionalProperties false, all listed', schema: { properties: { a: {} }, additionalProperties: false }, value: { a: 1 }, ok: true },
    { name: 'additionalProperties schema', schema: { properties: { a: {} }, additionalProperties: { bsonType: 'string' } }, value: { a: 1, b: 'x' }, ok: true },
    { name: 'additionalProperties schema fails', schema: { additionalProperties: { bsonType: 'string' } }, value: { b: 1 }, ok: false },
    { name: 'patternProperties', schema: { patternProperties: { '^n_': { bsonType: 'int' } } }, value: { n_a: 1, other: 'x' }, ok: true },
    { name: 'patternProperties fails', schema: { patternProperties: { '^n_': { bsonType: 'int' } } }, value: { n_a: 'x' }, ok: false },
    { name: 'a pattern property is not additional', schema: { patternProperties: { '^n_': {} }, additionalProperties: false }, value: { n_a: 1 }, ok: true },
    { name: 'minProperties', schema: { minProperties: 2 }, value: { a: 1 }, ok: false },
    { name: 'maxProperties', schema: { maxProperties: 1 }, value: { a: 1 }, ok: true },
    { name: 'dependencies on properties', schema: { dependencies: { card: ['billing'] } }, value: { card: 1 }, ok: false },
    { name: 'dependencies met', schema: { dependencies: { card: ['billing'] } }, value: { card: 1, billing: 2 }, ok: true },
    { name: 'dependencies without the property', schema: { dependencies: { card: ['billing'] } }, value: { other: 1 }, ok: true },
    { name: 'schema dependencies', schema: { dependencies: { card: { required: ['billing'] } } }, value: { card: 1 }, ok: false },
    { name: 'items schema', schema: { items: { bsonType: 'int' } }, value: [1, 2], ok: true },
    { name: 'items schema fails', schema: { items: { bsonType: 'int' } }, value: [1, 'x'], ok: false },
    { name: 'items array', schema: { items: [{ bsonType: 'int' }, { bsonType: 'string' }] }, value: [1, 'x', true], ok: true },
    { name: 'items array fails', schema: { items: [{ bsonType: 'int' }, { bsonType: 'string' }] }, value: ['x'], ok: false },
    { name: 'additionalItems false', schema: { items: [{}], additionalItems: false }, value: [1, 2], ok: false },
    { name: 'additionalItems schema', schema: { items: [{}], additionalItems: { bsonType: 'int' } }, value: ['x', 2], ok: true },
    { name: 'additionalItems without an items array', schema: { additionalItems: false }, value: [1, 2], ok: true },
    { name: 'minItems', schema: { minItems: 1 }, value: [], ok: false },
    { name: 'maxItems', schema: { maxItems: 1 }, value: [1, 2], ok: false },
    { name: 'uniqueItems', schema: { uniqueItems: true }, value: [1, 2], ok: true },
    { name: 'uniqueItems fails on numbers equal by value', schema: { uniqueItems: true }, value: [1, new Double(1)], ok: false },
    { name: 'uniqueItems fails on objects in another field order', schema: { uniqueItems: true }, value: [{ a: 1, b: 1 }, { b: 1, a: 1 }], ok: false },
    { name: 'allOf', schema: { allOf: [{ minimum: 1 }, { maximum: 2 }] }, value: 3, ok: false },
    { name: 'anyOf', schema: { anyOf: [{ bsonType: 'int' }, { bsonType: 'string' }] }, value: 'x', ok: true },
    { name: 'oneOf matching two', schema: { oneOf: [{ minimum: 1 }, { maximum: 5 }] }, value: 3, ok: false },
    { name: 'oneOf matching one', schema: { oneOf: [{ minimum: 1 }, { maximum: 0 }] }, value: 3, ok: true },
    { name: 'not', schema: { not: { bsonType: 'string' } }, value: 'x', ok: false },
    { name: 'title and description change nothing', schema: { title: 't', description: 'd', bsonType: 'int' }, value: 1, ok: true },
    { name: 'encrypt wants BinData subtype 6', schema: { encrypt: {} }, value: new Binary(Buffer.from('x'), 6), ok: true },
    { name: 'encrypt refuses plaintext', schema: { encrypt: { bsonType: 'string' } }, value: 'secret', ok: false },
  ];
  it.each(rows)('$name', ({ schema, value, ok }) => {
    expect(fieldMatches(schema, value)).toBe(ok);
  });
});

describe('schemas mongod refuses', () => {
  // Codes and texts of mongod's parser (src/mongo/db/matcher/schema/json_schema_parser.cpp), as
  // https://www.mongodb.com/docs/manual/reference/operator/query/jsonSchema/#omissions lists them.
  const rows: Array<{ schema: unknown; code: number; message: string }> = [
    { schema: 'x', code: 14, message: '$jsonSchema must be an object' },
    { schema: { x: 1 }, code: 9, message: 'Unknown $jsonSchema keyword: x' },
    { schema: { properties: { a: { examples: [] } } }, code: 9, message: 'Unknown $jsonSchema keyword: examples' },
    { schema: { $ref: '#/a' }, code: 9, message: "$jsonSchema keyword '$ref' is not currently supported" },
    { schema: { $schema: 'x' }, code: 9, message: "$jsonSchema keyword '$schema' is not currently supported" },
    { schema: { default: 1 }, code: 9, message: "$jsonSchema keyword 'default' is not currently supported" },
    { schema: { definitions: {} }, code: 9, message: "$jsonSchema keyword 'definitions' is not currently supported" },
    { schema: { format: 'email' }, code: 9, message: "$jsonSchema keyword 'format' is not currently supported" },
    { schema: { id: 'x' }, code: 9, message: "$jsonSchema keyword 'id' is not currently supported" },
    { schema: { type: 'integer' }, code: 9, message: "$jsonSchema type 'integer' is not currently supported." },
    { schema: { bsonType: 'integer' }, code: 2, message: 'Unknown type name alias: integer' },
    { schema: { type: 'int' }, code: 2, message: 'Unknown type name alias: int' },
    { schema: { type: 'string', bsonType: 'string' }, code: 9, message: "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'" },
    { schema: { bsonType: 1 }, code: 14, message: "$jsonSchema keyword 'bsonType' must be either a string or an array of strings" },
    { schema: { bsonType: [] }, code: 9, message: "$jsonSchema keyword 'bsonType' must name at least one type" },
    { schema: { bsonType: ['int', 'int'] }, code: 9, message: "$jsonSchema keyword 'bsonType' has duplicate value: int" },
    { schema: { title: 1 }, code: 14, message: "$jsonSchema keyword 'title' must be of type string" },
    { schema: { minimum: '1' }, code: 14, message: "$jsonSchema keyword 'minimum' must be a number" },
    { schema: { exclusiveMinimum: true }, code: 9, message: "$jsonSchema keyword 'minimum' must be a present if exclusiveMinimum is present" },
    { schema: { maximum: 1, exclusiveMaximum: 1 }, code: 14, message: "$jsonSchema keyword 'exclusiveMaximum' must be a boolean" },
    { schema: { multipleOf: 0 }, code: 9, message: "$jsonSchema keyword 'multipleOf' must have a positive value" },
    { schema: { minLength: -1 }, code: 9, message: 'Expected a positive number in: minLength: -1' },
    { schema: { maxItems: 1.5 }, code: 9, message: 'Expected an integer: maxItems: 1.5' },
    { schema: { pattern: 1 }, code: 14, message: "$jsonSchema keyword 'pattern' must be a string" },
    { schema: { required: [] }, code: 9, message: "$jsonSchema keyword 'required' cannot be an empty array" },
    { schema: { required: ['a', 'a'] }, code: 9, message: "$jsonSchema keyword 'required' array cannot contain duplicate values" },
    { schema: { required: 'a' }, code: 14, message: "$jsonSchema keyword 'required' must be an array, but found an element of type string" },
    { schema: { properties: { a: 1 } }, code: 14, message: "Nested schema for $jsonSchema property 'a' must be an object" },
    { schema: { additionalProperties: 1 }, code: 14, message: "$jsonSchema keyword 'additionalProperties' must be an object or a boolean" },
    { schema: { enum: [] }, code: 9, message: "$jsonSchema keyword 'enum' cannot be an empty array" },
    { schema: { enum: [1, 1] }, code: 9, message: "$jsonSchema keyword 'enum' array cannot contain duplicate values." },
    { schema: { allOf: [] }, code: 2, message: "$jsonSchema keyword 'allOf' must be a non-empty array" },
    { schema: { anyOf: {} }, code: 14, message: "$jsonSchema keyword 'anyOf' must be an array" },
    { schema: { not: [] }, code: 14, message: "$jsonSchema keyword 'not' must be an object, but found an element of type array" },
    { schema: { items: 1 }, code: 14, message: "$jsonSchema keyword 'items' must be an array or an object, not int" },
    { schema: { uniqueItems: 1 }, code: 14, message: "$jsonSchema keyword 'uniqueItems' must be a boolean" },
    { schema: { dependencies: { a: [] } }, code: 9, message: "property 'a' in $jsonSchema keyword 'dependencies' cannot be an empty array" },
    { schema: { encrypt: {}, bsonType: 'string' }, code: 9, message: "$jsonSchema keyword 'encrypt' cannot be used in conjunction with 'bsonType', 'encrypt' implies type 'bsonType::BinData'" },
  ];
  it.each(rows)('$schema: $code $message', ({ schema, code, message }) => {
    let err: unknown;
    try {
      compileJsonSchema(schema);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(MongoError);
    expect((err as MongoError).code).toBe(code);
    expect((err as MongoError).message).toBe(message);
  });
});

describe('errInfo details', () => {
  // The shape of https://www.mongodb.com/docs/manual/core/schema-validation/specify-json-schema/'s
  // example error: the failing rules only, with the considered value and its type.
  it('names the failing property, keyword and type', () => {
    const filter = { $jsonSchema: { required: ['name'], properties: { gpa: { bsonType: 'double', description: 'must be a double' } } } };
    expect(explainFilter(filter, { _id: 1, gpa: 3 })).toEqual({
      operatorName: '$jsonSchema',
      schemaRulesNotSatisfied: [
        {
          operatorName: 'properties',
          propertiesNotSatisfied: [
            {
              propertyName: 'gpa',
              description: 'must be a double',
              details: [{ operatorName: 'bsonType', specifiedAs: { bsonType: 'double' }, reason: 'type did not match', consideredValue: 3, consideredType: 'int' }],
            },
          ],
        },
        { operatorName: 'required', specifiedAs: { required: ['name'] }, missingProperties: ['name'] },
      ],
    });
  });

  it('lists only the failing clauses of a query validator', () => {
    expect(explainFilter({ a: { $gt: 1 }, b: 'x' }, { _id: 1, a: 5 })).toEqual({
      operatorName: '$and',
      clausesNotSatisfied: [{ index: 1, details: { operatorName: '$eq', specifiedAs: { b: 'x' }, reason: 'field was missing' } }],
    });
  });
});
