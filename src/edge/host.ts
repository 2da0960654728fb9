/**
 * The Host header, checked once for every door before anything else runs: HTTP/1.1 requires it (Node
 * would refuse a request without it with an empty 400; the edge answers in the contract's shape).
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../domain/errors.js';

export function registerHostCheck(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    const host = request.headers.host;
    if (host === undefined || host === '') {
      if (request.raw.httpVersionMajor === 1 && request.raw.httpVersionMinor === 1) {
        throw new AppError('malformed_request', { message: 'Missing Host header' });
      }
    }
  });
}
