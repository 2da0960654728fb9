/**
 * The one error catalog. Every failure a client can see is a row here, keyed by the REST `code` (also
 * GraphQL's `extensions.reason`): its HTTP status, its GraphQL `extensions.code`, the client-facing
 * text and whether retrying can help. REST, GraphQL and workers translate AppError at their edges;
 * anything that is not an AppError is masked as internal_error.
 */
export type GraphQLErrorCode =
  | 'UNAUTHENTICATED'
  | 'INSUFFICIENT_CREDITS'
  | 'BAD_USER_INPUT'
  | 'NOT_FOUND'
  | 'RATE_LIMITED'
  | 'SERVICE_UNAVAILABLE'
  | 'BAD_GATEWAY'
  | 'FORBIDDEN'
  | 'CONFLICT'
  | 'INTERNAL_SERVER_ERROR';

export interface ErrorSpec {
  readonly httpStatus: number;
  readonly graphqlCode: GraphQLErrorCode;
  /** Default client-facing text; validation errors replace it with a field-specific message. */
  readonly message: string;
  readonly retryable: boolean;
}

export const ERROR_CATALOG = {
  missing_authorization: {
    httpStatus: 401,
    graphqlCode: 'UNAUTHENTICATED',
    message: 'Missing or invalid Authorization header',
    retryable: false,
  },
  invalid_api_key_format: {
    httpStatus: 401,
    graphqlCode: 'UNAUTHENTICATED',
    message: 'Invalid API key format',
    retryable: false,
  },
  invalid_api_key: { httpStatus: 401, graphqlCode: 'UNAUTHENTICATED', message: 'Invalid API key', retryable: false },
  api_key_expired: { httpStatus: 401, graphqlCode: 'UNAUTHENTICATED', message: 'API key expired', retryable: false },
  client_token_expired: { httpStatus: 401, graphqlCode: 'UNAUTHENTICATED', message: 'Client token expired', retryable: false },
  invalid_client_token: { httpStatus: 401, graphqlCode: 'UNAUTHENTICATED', message: 'Invalid client token', retryable: false },
  origin_not_allowed: { httpStatus: 403, graphqlCode: 'FORBIDDEN', message: 'Origin not allowed for this token', retryable: false },
  scope_not_allowed: { httpStatus: 403, graphqlCode: 'FORBIDDEN', message: "Client token's scopes do not allow this operation", retryable: false },
  document_not_trusted: { httpStatus: 403, graphqlCode: 'FORBIDDEN', message: 'Only registered operations may run with this token', retryable: false },
  key_permission: { httpStatus: 403, graphqlCode: 'FORBIDDEN', message: 'This API key does not have permission for this operation', retryable: false },
  api_key_required: { httpStatus: 403, graphqlCode: 'FORBIDDEN', message: 'This operation needs an API key (client tokens cannot do it)', retryable: false },
  api_key_in_browser: {
    httpStatus: 403,
    graphqlCode: 'FORBIDDEN',
    message: 'API keys are for servers: a browser app needs a client token',
    retryable: false,
  },
  token_credit_limit: { httpStatus: 402, graphqlCode: 'INSUFFICIENT_CREDITS', message: 'Client token credit limit reached', retryable: false },
  key_credit_limit: { httpStatus: 402, graphqlCode: 'INSUFFICIENT_CREDITS', message: 'Key credit limit reached', retryable: false },
  insufficient_credits: {
    httpStatus: 402,
    graphqlCode: 'INSUFFICIENT_CREDITS',
    message: 'Insufficient credits',
    retryable: false,
  },
  invalid_request: { httpStatus: 400, graphqlCode: 'BAD_USER_INPUT', message: 'Invalid request', retryable: false },
  invalid_graphql: {
    httpStatus: 400,
    graphqlCode: 'BAD_USER_INPUT',
    message: 'Invalid GraphQL request',
    retryable: false,
  },
  invalid_json: {
    httpStatus: 400,
    graphqlCode: 'BAD_USER_INPUT',
    message: 'Request body is not valid JSON',
    retryable: false,
  },
  subscription_over_http: {
    httpStatus: 400,
    graphqlCode: 'BAD_USER_INPUT',
    message: 'Subscriptions are served over WebSocket (graphql-transport-ws) at /graphql',
    retryable: false,
  },
  job_not_found: { httpStatus: 404, graphqlCode: 'NOT_FOUND', message: 'Job not found', retryable: false },
  job_finished: { httpStatus: 409, graphqlCode: 'CONFLICT', message: 'Job already finished (completed or failed): nothing to cancel', retryable: false },
  route_not_found: { httpStatus: 404, graphqlCode: 'NOT_FOUND', message: 'Route not found', retryable: false },
  image_not_found: { httpStatus: 404, graphqlCode: 'NOT_FOUND', message: 'Image not found', retryable: false },
  image_expired: { httpStatus: 410, graphqlCode: 'NOT_FOUND', message: 'Image expired', retryable: false },
  webhook_not_found: { httpStatus: 404, graphqlCode: 'NOT_FOUND', message: 'Webhook not found', retryable: false },
  document_not_found: { httpStatus: 404, graphqlCode: 'NOT_FOUND', message: 'Document not found', retryable: false },
  invalid_signature: {
    httpStatus: 403,
    graphqlCode: 'FORBIDDEN',
    message: 'Invalid or expired image URL',
    retryable: false,
  },
  invalid_stripe_signature: {
    httpStatus: 400,
    graphqlCode: 'BAD_USER_INPUT',
    message: 'Missing, invalid or expired Stripe-Signature',
    retryable: false,
  },
  payments_disabled: { httpStatus: 404, graphqlCode: 'NOT_FOUND', message: 'Buying credits is not enabled on this server', retryable: false },
  purchase_not_recorded: {
    httpStatus: 409,
    graphqlCode: 'CONFLICT',
    message: 'The payment this event refers to is not recorded yet; retry later',
    retryable: true,
  },
  malformed_request: {
    httpStatus: 400,
    graphqlCode: 'BAD_USER_INPUT',
    message: 'Malformed HTTP request',
    retryable: false,
  },
  headers_too_large: {
    httpStatus: 431,
    graphqlCode: 'BAD_USER_INPUT',
    message: 'Request headers too large',
    retryable: false,
  },
  host_not_allowed: {
    httpStatus: 421,
    graphqlCode: 'BAD_USER_INPUT',
    message: 'Host not allowed',
    retryable: false,
  },
  request_timeout: {
    httpStatus: 408,
    graphqlCode: 'BAD_USER_INPUT',
    message: 'Request timed out',
    retryable: true,
  },
  payload_too_large: {
    httpStatus: 413,
    graphqlCode: 'BAD_USER_INPUT',
    message: 'Request body too large',
    retryable: false,
  },
  unsupported_media_type: {
    httpStatus: 415,
    graphqlCode: 'BAD_USER_INPUT',
    message: 'Content-Type must be application/json',
    retryable: false,
  },
  not_signed_in: { httpStatus: 401, graphqlCode: 'UNAUTHENTICATED', message: 'Sign in to continue', retryable: false },
  invalid_credentials: { httpStatus: 401, graphqlCode: 'UNAUTHENTICATED', message: 'Invalid email or password', retryable: false },
  too_many_attempts: { httpStatus: 429, graphqlCode: 'RATE_LIMITED', message: 'Too many attempts', retryable: true },
  cross_site_request: { httpStatus: 403, graphqlCode: 'FORBIDDEN', message: 'Cross-site request refused', retryable: false },
  role_forbidden: { httpStatus: 403, graphqlCode: 'FORBIDDEN', message: 'You do not have permission to do that', retryable: false },
  two_factor_required: {
    httpStatus: 403,
    graphqlCode: 'FORBIDDEN',
    message: 'This account requires two-factor authentication: set it up in Settings first',
    retryable: false,
  },
  last_owner: { httpStatus: 409, graphqlCode: 'CONFLICT', message: 'An account needs at least one owner', retryable: false },
  member_not_found: { httpStatus: 404, graphqlCode: 'NOT_FOUND', message: 'Member not found', retryable: false },
  already_member: { httpStatus: 409, graphqlCode: 'CONFLICT', message: 'That person is already a member of this account', retryable: false },
  invitation_not_found: { httpStatus: 404, graphqlCode: 'NOT_FOUND', message: 'Invitation not found', retryable: false },
  invitation_invalid: { httpStatus: 410, graphqlCode: 'NOT_FOUND', message: 'This link has expired or was already used', retryable: false },
  idempotency_key_reused: {
    httpStatus: 422,
    graphqlCode: 'BAD_USER_INPUT',
    message: 'Idempotency-Key was already used with a different request',
    retryable: false,
  },
  idempotency_key_in_progress: {
    httpStatus: 409,
    graphqlCode: 'CONFLICT',
    message: 'A request with this Idempotency-Key is still in progress',
    retryable: true,
  },
  too_many_subscriptions: {
    httpStatus: 429,
    graphqlCode: 'RATE_LIMITED',
    message: 'Too many open subscriptions',
    retryable: true,
  },
  rate_limited: { httpStatus: 429, graphqlCode: 'RATE_LIMITED', message: 'Too many requests', retryable: true },
  provider_failed: {
    httpStatus: 502,
    graphqlCode: 'BAD_GATEWAY',
    message: 'Upstream provider failed',
    retryable: true,
  },
  provider_unavailable: {
    httpStatus: 503,
    graphqlCode: 'SERVICE_UNAVAILABLE',
    message: 'Upstream provider unavailable',
    retryable: true,
  },
  email_unavailable: {
    httpStatus: 503,
    graphqlCode: 'SERVICE_UNAVAILABLE',
    message: 'Email could not be sent; try again later',
    retryable: true,
  },
  image_store_unavailable: {
    httpStatus: 503,
    graphqlCode: 'SERVICE_UNAVAILABLE',
    message: 'Image storage temporarily unavailable',
    retryable: true,
  },
  database_unavailable: {
    httpStatus: 503,
    graphqlCode: 'SERVICE_UNAVAILABLE',
    message: 'Service temporarily unavailable',
    retryable: true,
  },
  shutting_down: {
    httpStatus: 503,
    graphqlCode: 'SERVICE_UNAVAILABLE',
    message: 'Server is shutting down',
    retryable: true,
  },
  internal_error: {
    httpStatus: 500,
    graphqlCode: 'INTERNAL_SERVER_ERROR',
    message: 'Internal server error',
    retryable: true,
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOG;

export class AppError extends Error {
  override readonly name = 'AppError';
  readonly code: ErrorCode;
  readonly spec: ErrorSpec;
  /** Seconds, for 429 and 503 responses. */
  readonly retryAfter?: number;
  /** The request field the error is about, for validation errors. */
  readonly field?: string;

  constructor(code: ErrorCode, options: { message?: string; field?: string; retryAfter?: number; cause?: unknown } = {}) {
    const spec: ErrorSpec = ERROR_CATALOG[code];
    super(options.message ?? spec.message, { cause: options.cause });
    this.code = code;
    this.spec = spec;
    this.field = options.field;
    this.retryAfter = options.retryAfter;
  }

  get httpStatus(): number {
    return this.spec.httpStatus;
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

/** A 400 naming the field and the rule it broke, e.g. invalid('keyword', 'keyword must be a string'). */
export function invalid(field: string, message: string): AppError {
  return new AppError('invalid_request', { field, message });
}

export class UnreachableCaseError extends Error {
  constructor(value: never) {
    super(`Unreachable case: ${JSON.stringify(value)}`);
  }
}
