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
