import { bsonTypeName } from './bson-order.js';

// A command failure as mongod reports it: { ok: 0, errmsg, code, codeName, ...extra }.
export class MongoError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly codeName: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }

  toReply(): Record<string, unknown> {
    return { ok: 0, errmsg: this.message, code: this.code, codeName: this.codeName, ...this.extra };
  }
}

export const commandNotFound = (name: string): MongoError =>
  new MongoError(59, `no such command: '${name}'`, 'CommandNotFound');

export const namespaceNotFound = (ns: string): MongoError => new MongoError(26, `ns does not exist: ${ns}`, 'NamespaceNotFound');

/**
 * mongod's refusal of a command field of the wrong type (its IDL parser's TypeMismatch): `expected` is
 * one type name, or the list of those allowed.
 */
export function wrongFieldType(path: string, value: unknown, expected: string | string[]): MongoError {
  const wanted = typeof expected === 'string' ? `type '${expected}'` : `types '[${expected.join(', ')}]'`;
  return new MongoError(14, `BSON field '${path}' is the wrong type '${bsonTypeName(value)}', expected ${wanted}`, 'TypeMismatch');
}
