/**
 * The direct path of `/graphql` over HTTP (issue 26): the plain request of every GraphQL client (a JSON
 * POST of `query`, `variables` and `operationName`, a document that parses and validates, an operation
 * it names) is answered here, and everything else by Apollo Server as before.
 *
 * Why: Apollo's request pipeline costs a gateway about 40 µs of CPU per operation before and after
 * execution (a request context, a gateway context, a HeaderMap, a cloned context value, plugin hooks
 * awaited in turn, the document store's hash), which kept the GraphQL door over its target of +80 µs
 * over REST. This path does the same steps in the same order, without the objects in between:
 *  1. the document, parsed with the same token limit and validated with the same rules (graphql-js'
 *     specified rules, introspection's switch, armor's limits, no subscriptions over HTTP), kept per
 *     query text as Apollo's document store keeps it;
 *  2. the operation it names, then the context and the admission both transports share (admission.ts),
 *     whose refusal is answered as one request error with the catalog's status;
 *  3. execution through the same compiled functions (compiled-executor.ts);
 *  4. errors normalised and formatted as Apollo does (the same formatError; a variable's coercion error
 *     is BAD_USER_INPUT with 400), masked ones logged, the operation counted, and the body and media type
 *     Apollo would send.
 * A request this path does not take runs nothing here: the choice is made before the context exists.
 * The equivalence is tested request by request against Apollo (test/graphql/direct-path.test.ts).
 */
import { GraphQLError, getOperationAST, Kind, NoSchemaIntrospectionCustomRule, parse, specifiedRules, validate, type DocumentNode, type ExecutionResult, type GraphQLFormattedError, type GraphQLSchema, type OperationDefinitionNode, type ValidationRule } from 'graphql';
import Negotiator from 'negotiator';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { rateLimitHeaders } from '../../edge/rate-limit-headers.js';
import type { GraphQLContext } from '../../graphql/context.js';
import { toRequestError, type ErrorFormatter } from '../../graphql/errors.js';
import type { OperationAdmission } from './admission.js';
import type { CompiledExecution } from './compiled-executor.js';

/** Apollo Server's media types for a single result (its MEDIA_TYPES). */
const APPLICATION_JSON = 'application/json; charset=utf-8';
const SINGLE_RESULT_TYPES = [APPLICATION_JSON, 'application/graphql-response+json; charset=utf-8', 'application/json; callbackSpec=1.0; charset=utf-8'];
/**
 * Query texts kept, by count and by their total length (as Apollo's document store is bounded by size):
 * a deployment's clients send a few dozen; a flood of distinct texts only evicts the oldest. A text longer
 * than QUERY_KEPT_MAX_CHARS is answered all the same, parsed each time.
 */
const DOCUMENTS_KEPT = 1000;
const DOCUMENTS_KEPT_CHARS = 4 * 1024 * 1024;
const QUERY_KEPT_MAX_CHARS = 64 * 1024;
const ACCEPTS_KEPT = 100;

export interface DirectPathOptions {
  schema: GraphQLSchema;
  /** Armor's rules and the HTTP door's own (the rules Apollo is given). */
  validationRules: readonly ValidationRule[];
  introspection: boolean;
  maxTokens: number;
  formatError: ErrorFormatter;
  admission: OperationAdmission;
  execute: CompiledExecution;
  /** The request's context (the same function Apollo is given); undefined: Apollo's to answer. */
  contextOf(request: FastifyRequest): GraphQLContext | undefined;
  /** Told of every error the client receives, before formatting (logs the masked ones). */
  didEncounterErrors(errors: readonly GraphQLError[], context: GraphQLContext): void;
  /** Told of every operation answered: its type and whether any error went out. */
  answered?(operation: string, outcome: 'ok' | 'error'): void;
  /** How much is kept of query texts (tests); default: DOCUMENTS_KEPT, DOCUMENTS_KEPT_CHARS, QUERY_KEPT_MAX_CHARS. */
  keep?: { documents: number; chars: number; queryChars: number };
}

/** A document as kept: parsed and valid, with the operations resolved from it by name. */
interface Prepared {
  readonly document: DocumentNode;
  readonly operations: Map<string | undefined, OperationDefinitionNode | null>;
}

export interface DirectPath {
  /** The answer's body, once written; undefined (at once, nothing done): a request for Apollo. */
  answer(request: FastifyRequest, reply: FastifyReply): Promise<string> | undefined;
}

export function directPath(opts: DirectPathOptions): DirectPath {
  const rules = [...specifiedRules, ...(opts.introspection ? [] : [NoSchemaIntrospectionCustomRule]), ...opts.validationRules];
  // null: the text does not parse or validate, and Apollo answers it (with its own messages).
  const documents = new Map<string, Prepared | null>();
  let keptChars = 0;
  const keep = opts.keep ?? { documents: DOCUMENTS_KEPT, chars: DOCUMENTS_KEPT_CHARS, queryChars: QUERY_KEPT_MAX_CHARS };
  const mediaTypes = new Map<string, string | null>();

  const prepare = (query: string): Prepared | null => {
    let prepared = documents.get(query);
    if (prepared !== undefined) return prepared;
    prepared = null;
    try {
      const document = parse(query, { maxTokens: opts.maxTokens });
      if (validate(opts.schema, document, rules).length === 0) prepared = { document, operations: new Map() };
    } catch {
      // A syntax error or too many tokens: Apollo's answer.
    }
    if (query.length > keep.queryChars) return prepared;
    for (const oldest of documents.keys()) {
      if (documents.size < keep.documents && keptChars + query.length <= keep.chars) break;
      documents.delete(oldest);
      keptChars -= oldest.length;
    }
    documents.set(query, prepared);
    keptChars += query.length;
    return prepared;
  };

  const operationOf = (prepared: Prepared, name: string | undefined): OperationDefinitionNode | null => {
    let operation = prepared.operations.get(name);
    if (operation === undefined) {
      operation = getOperationAST(prepared.document, name) ?? null;
      if (prepared.operations.size < 100) prepared.operations.set(name, operation);
    }
    return operation;
  };

  /** Apollo's choice of media type for a single result (chooseContentTypeForSingleResultResponse); null: 406, Apollo's. */
  const mediaTypeFor = (accept: string | undefined): string | null => {
    if (!accept) return APPLICATION_JSON;
    let type = mediaTypes.get(accept);
    if (type === undefined) {
      type = new Negotiator({ headers: { accept } }).mediaType(SINGLE_RESULT_TYPES) ?? null;
      if (mediaTypes.size < ACCEPTS_KEPT) mediaTypes.set(accept, type);
    }
    return type;
  };

  const formatErrors = (errors: readonly GraphQLError[], head: Head): GraphQLFormattedError[] => errors.map((error) => formatOne(error, head, opts.formatError));

  async function run(reply: FastifyReply, prepared: Prepared, operation: OperationDefinitionNode, operationName: string | undefined, variables: Record<string, unknown> | undefined, mediaType: string, context: GraphQLContext): Promise<string> {
    const head: Head = { status: undefined, headers: new Map() };
    let body: { errors?: GraphQLFormattedError[]; data?: unknown; extensions?: unknown };
    let failed = false;
    const fail = (errors: readonly GraphQLError[]): void => {
      failed = true;
      opts.didEncounterErrors(errors, context);
      body = { errors: formatErrors(errors, head) };
      head.status ??= 500;
    };
    admission: {
      let admitted;
      try {
        admitted = await opts.admission.admit({ document: prepared.document, operation }, context);
      } catch (err) {
        fail([asGraphQLError(err)]);
        break admission;
      }
      const rateLimit = admitted.ok || admitted.kind === 'refused' ? admitted.rateLimit : null;
      if (rateLimit) for (const [name, value] of Object.entries(rateLimitHeaders(rateLimit))) head.headers.set(name, value);
      if (!admitted.ok) {
        fail([admitted.kind === 'refused' ? toRequestError(admitted.error) : asGraphQLError(new Error(`admission found an operation the direct path validated invalid: ${admitted.errors[0]?.message}`))]);
        break admission;
      }
      let result: ExecutionResult;
      try {
        result = await opts.execute(prepared.document, operationName, context, variables);
      } catch (err) {
        fail([asGraphQLError(err)]);
        break admission;
      }
      const errors = result.errors?.map((e) => (isBadUserInputGraphQLError(e) && e.extensions?.code == null ? userInputError(e) : e));
      let formatted: GraphQLFormattedError[] | undefined;
      if (errors) {
        failed = errors.length > 0;
        opts.didEncounterErrors(errors, context);
        formatted = formatErrors(errors, head);
        if (errors.length && result.data === undefined && !head.status) head.status = 400;
      }
      body = { errors: formatted, data: result.data, extensions: result.extensions };
    }
    opts.answered?.(operation.operation, failed ? 'error' : 'ok');
    for (const [name, value] of head.headers) void reply.header(name, value);
    void reply.header('content-type', mediaType);
    if (head.status !== undefined && head.status !== 200) void reply.code(head.status);
    // Apollo's stringifyResult (prettyJSONStringify), fields in its order.
    return JSON.stringify(body!) + '\n';
  }

  return {
    answer(request, reply) {
      if (request.method !== 'POST') return undefined;
      const body = request.body as Record<string, unknown> | null | undefined;
      if (!isRecord(body)) return undefined;
      const { query, variables, operationName } = body;
      // Persisted queries and other extensions, a missing query, a bad field: Apollo's answers.
      if (typeof query !== 'string' || !query || body.extensions !== undefined) return undefined;
      if (variables !== undefined && variables !== null && !isRecord(variables)) return undefined;
      if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return undefined;
      // The two JSON media types Apollo's CSRF prevention lets through without parsing (the patch's fast path).
      const contentType = request.headers['content-type'];
      if (contentType !== 'application/json' && contentType !== 'application/json; charset=utf-8') return undefined;
      const mediaType = mediaTypeFor(request.headers.accept);
      if (!mediaType) return undefined;
      const prepared = prepare(query);
      if (!prepared) return undefined;
      const name = operationName ?? undefined;
      const operation = operationOf(prepared, name);
      if (!operation) return undefined;
      const context = opts.contextOf(request);
      if (!context) return undefined;
      return run(reply, prepared, operation, name, isRecord(variables) ? variables : undefined, mediaType, context);
    },
  };
}

/** What Apollo calls the response's HTTP head: a status and headers, set by errors' `extensions.http`. */
interface Head {
  status: number | undefined;
  headers: Map<string, string>;
}

/** Apollo's normalizeAndFormatErrors for one error: its code (default INTERNAL_SERVER_ERROR), its `extensions.http` taken into the head, then formatError. */
function formatOne(error: GraphQLError, head: Head, formatError: ErrorFormatter): GraphQLFormattedError {
  try {
    const extensions: Record<string, unknown> = { ...error.extensions, code: error.extensions.code ?? 'INTERNAL_SERVER_ERROR' };
    const http = extensions.http as { status?: unknown; headers?: unknown } | undefined;
    if (http && typeof http === 'object' && (!('status' in http) || typeof http.status === 'number') && (!('headers' in http) || http.headers instanceof Map)) {
      if (typeof http.status === 'number' && http.status) head.status = http.status;
      if (http.headers instanceof Map) for (const [name, value] of http.headers) head.headers.set(String(name).toLowerCase(), String(value));
      delete extensions.http;
    }
    return formatError({ ...error.toJSON(), extensions }, error);
  } catch {
    return { message: 'Internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } };
  }
}

/** Apollo's ensureGraphQLError. */
function asGraphQLError(err: unknown): GraphQLError {
  if (err instanceof GraphQLError) return err;
  const error = err instanceof Error ? err : new GraphQLError('Unexpected error value: ' + String(err));
  return error instanceof GraphQLError ? error : new GraphQLError(error.message, { originalError: error });
}

/** Apollo's test for a variable's coercion error (requestPipeline's isBadUserInputGraphQLError). */
function isBadUserInputGraphQLError(error: GraphQLError): boolean {
  const node = error.nodes?.length === 1 ? error.nodes[0] : undefined;
  if (node?.kind !== Kind.VARIABLE_DEFINITION) return false;
  const name = node.variable.name.value;
  return ['has invalid value', 'got invalid value ', 'of required type ', 'of non-null type '].some((tail) => error.message.startsWith(`Variable "$${name}" ${tail}`));
}

/** Apollo's UserInputError: the same error with code BAD_USER_INPUT. */
function userInputError(error: GraphQLError): GraphQLError {
  return new GraphQLError(error.message, { nodes: error.nodes, originalError: error.originalError ?? error, extensions: { ...error.extensions, code: 'BAD_USER_INPUT' } });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Buffer.isBuffer(value) && !Array.isArray(value);
}
