/**
 * What a request log line says about the request: Fastify's own fields, with the values of query
 * parameters that are secrets redacted (the one list in src/domain/links/secret-params.ts: emailed
 * link tokens, signed image URLs' `sig`). Logs are read by more people, and kept longer, than a
 * link's holder: a reset link's token in a log line is the account.
 */
import type { FastifyRequest } from 'fastify';
import { SECRET_QUERY_PARAMS } from '../domain/links/secret-params.js';

/** Compared decoded and case-insensitively. */
const SECRET_PARAMS = new Set(SECRET_QUERY_PARAMS.map((name) => name.toLowerCase()));
const REDACTED = '[redacted]';

/**
 * The URL with every secret parameter's value replaced by `[redacted]`, also inside a parameter whose
 * value is itself a URL (a link carried in `next` through sign-in); the rest as it came.
 */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    if (SECRET_PARAMS.has(decode(name).toLowerCase())) return `${name}=${REDACTED}`;
    if (eq < 0) return pair;
    const value = decode(pair.slice(eq + 1));
    const inner = value.includes('?') ? redactUrl(value) : value;
    return inner === value ? pair : `${name}=${encodeURIComponent(inner).replaceAll(encodeURIComponent(REDACTED), REDACTED)}`;
  });
  return `${url.slice(0, q)}?${query.join('&')}`;
}

function decode(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return text;
  }
}

/** pino's `req` serializer: Fastify's default fields, with the URL redacted. */
export function requestLogFields(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
