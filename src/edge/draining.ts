/**
 * Graceful close for every HTTP door. Once the app starts closing (SIGTERM → app.close()):
 *  - a request that arrives anyway (on a keep-alive connection, or pipelined) gets a 503
 *    `shutting_down` in its door's error shape, with Retry-After, before anything else runs;
 *  - every answer, including those of requests already in flight, says `Connection: close`, so the
 *    client's socket ends with it instead of idling until the keep-alive timeout and holding the
 *    server's close open. Idle sockets are closed by the server's close itself.
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../domain/errors.js';

/** Another instance can take the request at once: ask for a short wait. */
const SHUTDOWN_RETRY_AFTER_SECONDS = 1;

/** Register first: its preClose and onRequest hooks must run before any other. */
export function registerDraining(app: FastifyInstance): void {
  let draining = false;
  app.addHook('preClose', async function startDraining() {
    draining = true;
  });
  app.addHook('onRequest', async function refuseWhileDraining() {
    if (draining) throw new AppError('shutting_down', { retryAfter: SHUTDOWN_RETRY_AFTER_SECONDS });
  });
  app.addHook('onSend', async function closeWhileDraining(request, reply, payload) {
    if (draining && request.raw.httpVersionMajor === 1) reply.header('connection', 'close');
    return payload;
  });
}
