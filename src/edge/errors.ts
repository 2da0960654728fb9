/**
 * Error translation for every door (REST, GraphQL over HTTP and WebSocket, the console): whatever was
 * thrown becomes a catalog AppError, with the retry hint and the log level that go with it. Only
 * faults of ours become internal_error, and those are logged with the request id, never sent.
 */
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { isDatabaseUnavailableError } from '../data/connection.js';
import { AppError, isAppError, type ErrorCode } from '../domain/errors.js';
import type { Logger } from '../domain/logger.js';
import { invalidFrom } from '../domain/validation.js';

/** Seconds clients are asked to wait after a 429 or 503 that carries no figure of its own. */
export const RETRY_AFTER_SECONDS = 5;

/** An AppError, or an unreachable database (a 503 the client may retry, not a fault); else undefined. */
export function knownAppError(err: unknown): AppError | undefined {
  if (isAppError(err)) return err;
  if (isDatabaseUnavailableError(err)) return new AppError('database_unavailable', { retryAfter: RETRY_AFTER_SECONDS, cause: err });
  return undefined;
}

/** Fastify's own error codes for what the client sent. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  // A path whose percent-encoding does not decode, or a parameter longer than the router takes.
  FST_ERR_BAD_URL: 'malformed_request',
  FST_ERR_MAX_PARAM_LENGTH: 'malformed_request',
};

/** Everything that can go wrong, as a catalog error. */
export function toAppError(err: unknown): AppError {
  const known = knownAppError(err);
  if (known) return known;
  if (hasZodFastifySchemaValidationErrors(err)) return schemaError(err.validation, (err as { validationContext?: string }).validationContext);
  const e = (err ?? {}) as { code?: unknown; statusCode?: unknown; message?: unknown };
  const mapped = typeof e.code === 'string' ? FASTIFY_CODES[e.code] : undefined;
  if (mapped) return new AppError(mapped, { cause: err });
  const status = typeof e.statusCode === 'number' ? e.statusCode : undefined;
  // Body parsing errors without a code of their own (JSON.parse through Fastify).
  if (err instanceof SyntaxError || (status === 400 && typeof e.message === 'string' && /JSON/i.test(e.message))) return new AppError('invalid_json', { cause: err });
  if (status === 413) return new AppError('payload_too_large', { cause: err });
  if (status === 415) return new AppError('unsupported_media_type', { cause: err });
  if (status !== undefined && status >= 400 && status < 500) return new AppError('invalid_request', { cause: err });
  return new AppError('internal_error', { cause: err });
}

/**
 * A route schema's refusal (fastify-type-provider-zod) as the contract's 400: the same field and text
 * the domain's parse gives, since the schemas are the domain's (src/domain/validation.ts).
 */
function schemaError(issues: readonly { instancePath: string; message?: string }[], context: string | undefined): AppError {
  const header = (name: PropertyKey) => String(name).replace(/(^|-)([a-z])/g, (_, dash: string, c: string) => dash + c.toUpperCase());
  return invalidFrom(
    issues.map((issue) => {
      const path: PropertyKey[] = issue.instancePath
        .split('/')
        .filter(Boolean)
        .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
      // Headers by their usual spelling: `Idempotency-Key must be …`.
      if (context === 'headers' && path.length > 0) path[0] = header(path[0]!);
      return { path, message: issue.message ?? 'is invalid' };
    }),
    context === 'body' ? 'body' : '',
  );
}

/** How loudly an error is logged: faults as errors, upstream and infrastructure trouble as warnings. */
export function logLevelOf(err: AppError): 'error' | 'warn' | null {
  if (err.code === 'internal_error') return 'error';
  return err.httpStatus >= 500 ? 'warn' : null;
}

/** Seconds to send in Retry-After, for the errors that have one. */
export function retryAfterOf(err: AppError): number | undefined {
  return err.retryAfter ?? (err.httpStatus === 503 || err.httpStatus === 429 ? RETRY_AFTER_SECONDS : undefined);
}

/** HTTP headers that go with an error, whatever the body's shape (REST, GraphQL, console). */
export function errorHeaders(err: AppError): Record<string, string> {
  const headers: Record<string, string> = {};
  const retryAfter = retryAfterOf(err);
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter);
  if (err.code === 'missing_authorization' || err.code === 'invalid_api_key_format' || err.code === 'invalid_api_key') headers['www-authenticate'] = 'Bearer';
  return headers;
}

/** The contract's error body. */
export function errorBody(err: AppError, requestId: string): { error: string; code: ErrorCode; requestId: string } {
  return { error: err.message, code: err.code, requestId };
}

/** The edge's translation, logged at the level it deserves with the request id. */
export function translate(err: unknown, request: { id: unknown; log: Pick<Logger, 'error' | 'warn'> }): AppError {
  const appError = toAppError(err);
  const level = logLevelOf(appError);
  if (level) request.log[level]({ err: appError.cause ?? err, code: appError.code, requestId: request.id }, appError.code === 'internal_error' ? 'unexpected error' : appError.message);
  return appError;
}
