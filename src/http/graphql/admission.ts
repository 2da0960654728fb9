/**
 * Admission of one GraphQL operation, the same for both transports (as Apollo keeps its request
 * pipeline apart from `runHttpQuery`): the document (parsed and validated), the operation, the
 * credential checked again, what the operation catalog says of its root fields (the key's
 * permissions: one field outside them refuses the whole operation, 403 `key_permission`; the rate
 * limit's units), and the caps. Over HTTP Apollo has parsed and validated the
 * document already, with the same rules (execution.ts), and hands it in from its document store; over
 * WebSocket the query text comes in and is parsed and validated here. What is refused runs nothing and
 * charges nothing; the door answers the outcome in its protocol.
 */
import { GraphQLError, getOperationAST, parse, validate, type DocumentNode, type OperationDefinitionNode } from 'graphql';
import { AppError } from '../../domain/errors.js';
import { rateLimitedError, type RateLimitOutcome } from '../../domain/keys/rate-limit.js';
import type { KeyPermission } from '../../domain/keys/permissions.js';
import { keyHas } from '../../domain/operations/access.js';
import type { Principal } from '../../domain/principal.js';
import type { CredentialCheck, Credentials } from '../../edge/credentials.js';
import { rootFields } from '../../graphql/root-fields.js';
import type { Execution } from './execution.js';

/** The operation as a door received it. */
export type OperationSource =
  /** Query text to parse and validate (WebSocket). */
  | { readonly query: string; readonly operationName?: string | null }
  /** A document Apollo parsed and validated with the same rules, and the operation it resolved (HTTP). */
  | { readonly document: DocumentNode; readonly operation: OperationDefinitionNode | null | undefined };

export interface AdmissionCaller {
  readonly principal: Principal;
  /**
   * The credential checked again, counting the operation's first unit of the rate limit (WebSocket:
   * every operation is a request of its own). Absent: the edge checked and counted it for this very
   * request (HTTP).
   */
  recheck?(): Promise<CredentialCheck>;
  /**
   * Takes a place under the transport's caps for an operation that holds one (WebSocket subscriptions),
   * and keeps what it needs of the key (`permissions`: one per root field's catalog row) to hold it to
   * them while it runs.
   */
  hold?(operation: OperationDefinitionNode, permissions: readonly KeyPermission[]): AppError | undefined;
}

export type Admission =
  | {
      readonly ok: true;
      readonly document: DocumentNode;
      readonly operation: OperationDefinitionNode;
      /** The caller as the recheck found it (its settings may have changed since the connection began). */
      readonly principal: Principal;
      /** The rate limit's verdict on the operation's further units; null when none were counted. */
      readonly rateLimit: RateLimitOutcome | null;
    }
  /** The document does not parse or validate, or names no operation: the client's (400, BAD_USER_INPUT). */
  | { readonly ok: false; readonly kind: 'invalid'; readonly errors: readonly GraphQLError[] }
  /** Refused before execution: the catalog's status (401, 403, 429, …), with the rate limit's verdict if counted. */
  | { readonly ok: false; readonly kind: 'refused'; readonly error: AppError; readonly rateLimit: RateLimitOutcome | null };

export interface OperationAdmission {
  admit(source: OperationSource, caller: AdmissionCaller): Promise<Admission>;
}

export function operationAdmission(deps: {
  execution: Pick<Execution, 'schema' | 'socketRules' | 'maxTokens'>;
  credentials: Pick<Credentials, 'count'>;
}): OperationAdmission {
  const { execution, credentials } = deps;

  const documentOf = (source: OperationSource): { document: DocumentNode; operation: OperationDefinitionNode | null | undefined } | GraphQLError[] => {
    if ('document' in source) return source;
    let document: DocumentNode;
    try {
      document = parse(source.query, { maxTokens: execution.maxTokens });
    } catch (err) {
      return [clientError(err instanceof GraphQLError ? err.message : 'Syntax error')];
    }
    const errors = validate(execution.schema, document, execution.socketRules);
    if (errors.length) return errors.map((e) => clientError(e.message));
    return { document, operation: getOperationAST(document, source.operationName) };
  };

  return {
    async admit(source, caller) {
      const parsed = documentOf(source);
      if (Array.isArray(parsed)) return { ok: false, kind: 'invalid', errors: parsed };
      const { document, operation } = parsed;
      if (!operation) return { ok: false, kind: 'invalid', errors: [clientError('Unable to identify the operation to run')] };

      let principal = caller.principal;
      if (caller.recheck) {
        const check = await caller.recheck();
        if (!check.ok) return { ok: false, kind: 'refused', error: check.error, rateLimit: null };
        principal = check.principal;
      }

      const fields = rootFields(document, operation);
      // A field served without a catalog row would run unpriced and unpermitted: refuse it (a fault of ours).
      if (fields.unknown.length) throw new Error(`GraphQL root fields not in the operation catalog: ${fields.unknown.join(', ')}`);
      // The key's permissions hold for the whole operation: one field outside them and none runs.
      for (const permission of fields.permissions) {
        if (!keyHas(principal, permission)) return { ok: false, kind: 'refused', error: new AppError('key_permission'), rateLimit: null };
      }

      // The request carrying the operation counted one unit (the edge, or the recheck); its charging
      // fields count the rest.
      let rateLimit: RateLimitOutcome | null = null;
      if (fields.rateUnits > 1) {
        rateLimit = await credentials.count(principal, fields.rateUnits - 1);
        if (rateLimit && !rateLimit.ok) return { ok: false, kind: 'refused', error: rateLimitedError(rateLimit), rateLimit };
      }

      const over = caller.hold?.(operation, fields.permissions);
      if (over) return { ok: false, kind: 'refused', error: over, rateLimit };
      return { ok: true, document, operation, principal, rateLimit };
    },
  };
}

function clientError(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });
}

/** The refusal of an admission as the GraphQL error a door answers with (its code from the error catalog). */
export function refusalError(err: AppError): GraphQLError {
  return new GraphQLError(err.message, { originalError: err });
}
