import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { AppError, ERROR_CATALOG, type ErrorCode } from '../domain/errors.js';
import { knownAppError } from '../edge/errors.js';

/**
 * The GraphQL edge of the error catalog. An AppError becomes its catalog text, `extensions.code` and
 * `extensions.reason` (the REST `code` of the same condition, so clients tell conditions apart without
 * reading `message`); errors about the document or the request itself (parse, validation, variables,
 * CSRF, limits) are the client's: BAD_USER_INPUT, reason `invalid_graphql`, with graphql-js' message;
 * anything else is a fault, masked as INTERNAL_SERVER_ERROR (`internal_error`) and logged with the
 * request id by the caller.
 */

/** Codes that graphql-js, Apollo Server and graphql-armor give errors the client caused. */
const CLIENT_ERROR_CODES: ReadonlySet<string> = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'BAD_USER_INPUT',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'INTROSPECTION_DISABLED',
  'MAX_RECURSIVE_SELECTIONS_EXCEEDED',
]);

const INTERNAL: GraphQLFormattedError = {
  message: ERROR_CATALOG.internal_error.message,
  extensions: { code: ERROR_CATALOG.internal_error.graphqlCode, reason: 'internal_error' satisfies ErrorCode },
};

/** The reason of every error about the document, the variables or the HTTP request of an operation. */
const CLIENT_REASON: ErrorCode = 'invalid_graphql';

/**
 * The AppError behind a GraphQL error (resolver errors are wrapped once, sometimes twice). Walks
 * `originalError` without `instanceof GraphQLError`: a loader may hold graphql's CommonJS and ESM builds
 * at once (vitest does), and an error from one is not an instance of the other's class.
 */
export function appErrorOf(error: unknown): AppError | undefined {
  let e: unknown = error;
  for (let depth = 0; depth < 4 && e; depth++) {
    // The same rule as every door: an unreachable database is a 503 the client may retry, not a fault.
    const known = knownAppError(e);
    if (known) return known;
    e = typeof e === 'object' && 'originalError' in e ? (e as { originalError?: unknown }).originalError : undefined;
  }
  return undefined;
}

/** True when the error will be shown masked: a fault of ours, to be logged with the request id. */
export function isMaskedError(error: unknown): boolean {
  const formatted: GraphQLFormattedError =
    typeof (error as GraphQLError | undefined)?.toJSON === 'function' ? (error as GraphQLError).toJSON() : { message: String(error) };
  return formatGraphQLError(formatted, error).extensions?.code === 'INTERNAL_SERVER_ERROR';
}

/** Apollo's formatError, also used for WebSocket results (same shape whatever the transport). */
export function formatGraphQLError(formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const app = appErrorOf(error);
  if (app) {
    if (app.spec.graphqlCode === 'INTERNAL_SERVER_ERROR') return withPlace(INTERNAL, formatted);
    return withPlace(
      {
        message: app.message,
        extensions: {
          code: app.spec.graphqlCode,
          reason: app.code,
          ...(app.field ? { field: app.field } : {}),
          ...(app.retryAfter !== undefined ? { retryAfter: app.retryAfter } : {}),
        },
      },
      formatted,
    );
  }
  // Only graphql-js, Apollo Server and graphql-armor set these codes, and only for the client's mistakes.
  const code = formatted.extensions?.code;
  // Apollo's automatic persisted query codes stay Apollo's: Apollo Client's persisted-queries link
  // reads PERSISTED_QUERY_NOT_FOUND to send the query text again.
  if (code === 'PERSISTED_QUERY_NOT_FOUND' || code === 'PERSISTED_QUERY_NOT_SUPPORTED') {
    return withPlace({ message: formatted.message, extensions: { code, reason: CLIENT_REASON } }, formatted);
  }
  if ((typeof code === 'string' && CLIENT_ERROR_CODES.has(code)) || isRequestError(formatted, error)) {
    return withPlace({ message: formatted.message, extensions: { code: 'BAD_USER_INPUT', reason: reasonOf(formatted, 'BAD_USER_INPUT') ?? CLIENT_REASON } }, formatted);
  }
  if (typeof code === 'string' && isContractCode(code)) {
    const reason = reasonOf(formatted, code);
    return withPlace({ message: formatted.message, extensions: { code, ...(reason ? { reason } : {}) } }, formatted);
  }
  return withPlace(INTERNAL, formatted);
}

export type ErrorFormatter = (formatted: GraphQLFormattedError, error: unknown) => GraphQLFormattedError;

/** graphql-js' "Did you mean …?" hints: field, argument, type and enum value names of the schema. */
const SUGGESTION = /\s*Did you mean [^?]*\?/g;

/**
 * formatGraphQLError for one deployment. With introspection off, graphql-js' suggestions would reveal
 * the schema piece by piece, so they are cut from client errors (HTTP and WebSocket alike).
 */
export function errorFormatter(opts: { hideSuggestions: boolean }): ErrorFormatter {
  if (!opts.hideSuggestions) return formatGraphQLError;
  return (formatted, error) => {
    const result = formatGraphQLError(formatted, error);
    const message = result.message.replace(SUGGESTION, '');
    return message === result.message ? result : { ...result, message };
  };
}

/** A context-creation failure (authentication) as a request-level error with the catalog's HTTP status. */
export function toRequestError(err: AppError): GraphQLError {
  const headers = new Map<string, string>();
  if (err.retryAfter !== undefined) headers.set('retry-after', String(err.retryAfter));
  return new GraphQLError(err.message, {
    originalError: err,
    extensions: { code: err.spec.graphqlCode, http: { status: err.httpStatus, headers } },
  });
}

function isContractCode(code: string): boolean {
  return Object.values(ERROR_CATALOG).some((row) => row.graphqlCode === code && code !== 'INTERNAL_SERVER_ERROR');
}

/**
 * The catalog row of a coded error raised without an AppError behind it: the `reason` it names, or the
 * row whose text it carries. Doors should raise AppErrors; this keeps a reason on the others.
 */
function reasonOf(formatted: GraphQLFormattedError, code: string): ErrorCode | undefined {
  const rows = Object.entries(ERROR_CATALOG).filter(([, row]) => row.graphqlCode === code) as [ErrorCode, (typeof ERROR_CATALOG)[ErrorCode]][];
  const named = formatted.extensions?.reason;
  return (rows.find(([reason]) => reason === named) ?? rows.find(([, row]) => row.message === formatted.message))?.[0];
}

/**
 * A request error of graphql-js (GraphQL spec 7.1.2): no path, no code, and nothing but GraphQL errors
 * behind it (a variable's coercion error wraps the scalar's own). The WebSocket door executes with
 * graphql-js directly (no Apollo to code them), so a missing or mistyped variable arrives this way;
 * resolver faults always carry a path, and a thrown non-GraphQL error stays a fault.
 */
function isRequestError(formatted: GraphQLFormattedError, error: unknown): boolean {
  if (formatted.path) return false;
  // graphql-js stops coercing variables after 50 errors with this error of its own, which Apollo
  // passes on as INTERNAL_SERVER_ERROR: the variables were the client's.
  if (TOO_MANY_VARIABLE_ERRORS.test(formatted.message)) return true;
  if (formatted.extensions?.code !== undefined) return false;
  let e = error as { name?: unknown; originalError?: unknown } | null | undefined;
  for (let depth = 0; depth < 4 && e; depth++) {
    if (e.name !== 'GraphQLError') return false;
    e = e.originalError as typeof e;
  }
  return !e;
}

const TOO_MANY_VARIABLE_ERRORS = /^Too many errors processing variables, error limit reached/;

function withPlace(base: GraphQLFormattedError, formatted: GraphQLFormattedError): GraphQLFormattedError {
  return {
    ...base,
    ...(formatted.locations ? { locations: formatted.locations } : {}),
    ...(formatted.path ? { path: formatted.path } : {}),
  };
}
