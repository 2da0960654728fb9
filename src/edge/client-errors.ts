/**
 * Errors the HTTP parser raises before (or instead of) a request reaching any door: a request that
 * took too long to arrive (headers or body), headers too large, bytes that are not HTTP. Node hands
 * them to the server's `clientError` handler with the bare socket; this one answers in the contract's
 * shape with a request id, as every door does, then closes the connection (the parser cannot go on).
 * Where the parser cannot answer at all (a response already under way), the connection is closed.
 */
import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { AppError, type ErrorCode } from '../domain/errors.js';
import { errorBody, errorHeaders } from './errors.js';

/** The request a socket is busy with, so that a timeout names it (and is not written over its answer). */
interface InFlight {
  id: string;
  res: ServerResponse;
}

export interface ClientErrorEdge {
  /** Fastify's `clientErrorHandler` option. */
  handler(this: { log: FastifyBaseLogger }, err: Error & { code?: string }, socket: Socket): void;
  /** Tracks the request each socket is busy with (call once, on the root instance). */
  register(app: FastifyInstance): void;
}

export function createClientErrorEdge(): ClientErrorEdge {
  const inFlight = new WeakMap<Socket, InFlight>();
  return {
    handler(err, socket) {
      // A reset or a socket already gone: there is nobody to answer.
      if (err.code === 'ECONNRESET' || socket.destroyed) return;
      const current = inFlight.get(socket);
      const appError = new AppError(codeOf(err), { cause: err });
      // Where an answer has started there is no room for another one: only the connection can go.
      if (current?.res.headersSent) {
        this.log.info({ requestId: current.id, code: appError.code, parserError: err.code ?? err.message }, 'client error');
        socket.destroy();
        return;
      }
      refuseConnection(socket, appError, this.log, { requestId: current?.id, detail: err.code ?? err.message });
    },
    register(app) {
      app.addHook('onRequest', async function trackInFlight(request, reply) {
        inFlight.set(request.raw.socket, { id: String(request.id), res: reply.raw });
      });
      app.addHook('onResponse', async function forgetInFlight(request) {
        if (inFlight.get(request.raw.socket)?.id === String(request.id)) inFlight.delete(request.raw.socket);
      });
    },
  };
}

function codeOf(err: { code?: string }): ErrorCode {
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'request_timeout';
  if (err.code === 'HPE_HEADER_OVERFLOW') return 'headers_too_large';
  return 'malformed_request';
}

/**
 * Answers a connection that has no ServerResponse (a parser error, a refused WebSocket upgrade) with
 * the contract's error and a request id, then closes it. Logged at info: the client's doing.
 */
export function refuseConnection(
  socket: Duplex,
  err: AppError,
  log: Pick<FastifyBaseLogger, 'info'>,
  opts: { requestId?: string; detail?: string } = {},
): void {
  const requestId = opts.requestId ?? randomUUID();
  log.info({ requestId, code: err.code, ...(opts.detail ? { detail: opts.detail } : {}) }, 'client error');
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  socket.end(rawResponse(err, requestId), () => socket.destroy());
}

/** A whole HTTP/1.1 response, written to the socket by hand (there is no ServerResponse to use). */
function rawResponse(err: AppError, requestId: string): string {
  const body = JSON.stringify(errorBody(err, requestId));
  const headers: Record<string, string> = {
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    'x-request-id': requestId,
    ...errorHeaders(err),
  };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
  return `HTTP/1.1 ${err.httpStatus} ${STATUS_CODES[err.httpStatus]}\r\n${lines.join('')}\r\n${body}`;
}
