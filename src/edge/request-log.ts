/**
 * What a request log line says about the request: Fastify's own fields, with the values of query
 * parameters that are secrets redacted. A signed image URL's `sig` is a bearer credential for hours;
 * logs are read by more people, and kept longer, than the URL's holder.
 */
import type { FastifyRequest } from 'fastify';

/** Query parameters whose values never reach a log line (compared decoded and case-insensitively). */
const SECRET_PARAMS = new Set(['sig']);

/** The URL with every secret parameter's value replaced by `[redacted]`; the rest as it came. */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const name = eq < 0 ? pair : pair.slice(0, eq);
    return SECRET_PARAMS.has(decodeName(name).toLowerCase()) ? `${name}=[redacted]` : pair;
  });
  return `${url.slice(0, q)}?${query.join('&')}`;
}

function decodeName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
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
