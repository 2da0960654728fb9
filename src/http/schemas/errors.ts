/**
 * The error responses a REST route declares, in the contract's shape `{error, code, requestId}` with
 * `code` limited to the catalog codes that status can carry for that route. A route lists its own
 * codes; the edge's (what any request can be answered) are added here.
 */
import { z } from 'zod';
import { ERROR_CATALOG, type ErrorCode } from '../../domain/errors.js';

/** Any request, probes included: a bad URL, a stalled or oversized request, shutdown, a fault of ours. */
export const PROBE_EDGE = ['malformed_request', 'request_timeout', 'headers_too_large', 'shutting_down', 'internal_error'] as const satisfies readonly ErrorCode[];
/** Every route but the probes: also a Host outside ALLOWED_HOSTS and an unreachable database. */
export const EDGE = [...PROBE_EDGE, 'host_not_allowed', 'database_unavailable'] as const satisfies readonly ErrorCode[];
/** Routes with `config: { auth: 'apiKey', operation }`: the contract's 401s, the key's rate limit, its permissions. */
export const API_KEY = ['missing_authorization', 'invalid_api_key_format', 'invalid_api_key', 'rate_limited', 'key_permission'] as const satisfies readonly ErrorCode[];
/** Routes that read a JSON body. */
export const JSON_BODY = ['invalid_json', 'payload_too_large', 'unsupported_media_type'] as const satisfies readonly ErrorCode[];
/** Charging routes under an `Idempotency-Key`. */
export const IDEMPOTENT = ['idempotency_key_reused', 'idempotency_key_in_progress'] as const satisfies readonly ErrorCode[];

/** The contract's error body for these codes. */
export function errorBody(codes: readonly ErrorCode[]) {
  return z
    .object({
      error: z.string().meta({ description: 'Client-facing text; for 400 invalid_request it names the field and the rule.' }),
      code: z.enum(codes as [ErrorCode, ...ErrorCode[]]).meta({ description: 'Stable snake_case code (README, Errors).' }),
      requestId: z.string().meta({ description: 'Also sent as X-Request-Id; quote it when reporting a problem.' }),
    })
    .meta({ description: codes.map((c) => `\`${c}\`: ${ERROR_CATALOG[c].message}`).join('; ') });
}

/**
 * `response` entries for these codes (and the edge's), one per HTTP status. A status the route also
 * answers with another body (`/readyz`'s 503) takes both: pass that body in `others`.
 */
export function errorResponses(codes: readonly ErrorCode[], others: Record<number, z.ZodType> = {}): Record<number, z.ZodType> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = ERROR_CATALOG[code].httpStatus;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<number, z.ZodType> = { ...others };
  for (const [status, list] of [...byStatus].sort(([a], [b]) => a - b)) {
    const body = errorBody(list);
    responses[status] = others[status] ? z.union([others[status], body]) : body;
  }
  return responses;
}
