/**
 * The console's error and not-found handlers: the edge's translation, shaped for a person (an error
 * page, or the sign-in page when the session is missing) or for a JSON client (the contract's body).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../domain/errors.js';
import { errorBody, errorHeaders, translate } from '../edge/errors.js';
import { wantsJson } from './context.js';
import { continuePage, errorPage, sendHtml } from './render.js';

export function consoleErrorHandler(err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  const e = translate(err, request);
  if (e.code === 'not_signed_in' && !wantsJson(request) && arrivedCrossSite(request)) {
    // A cross-site navigation (the return from Stripe Checkout, a link in an email) carries no
    // SameSite=Strict cookie: continue same-site, where the browser sends it, instead of signing out.
    return sendHtml(reply.code(200), continuePage(request.url));
  }
  if (e.code === 'not_signed_in' && !wantsJson(request)) {
    const next = request.method === 'GET' && request.url !== '/console' ? `?next=${encodeURIComponent(request.url)}` : '';
    return reply.code(303).header('location', `/console/sign-in${next}`).send();
  }
  reply.code(e.httpStatus).headers(errorHeaders(e));
  if (wantsJson(request)) return reply.type('application/json; charset=utf-8').send(errorBody(e, String(request.id)));
  return sendHtml(reply, errorPage(request, e));
}

/** A top-level GET navigation that came from another site. */
function arrivedCrossSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  return request.method === 'GET' && (site === 'cross-site' || site === 'same-site') && request.headers['sec-fetch-mode'] === 'navigate';
}

export function consoleNotFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  reply.code(404);
  return wantsJson(request) ? reply.send(errorBody(new AppError('route_not_found'), String(request.id))) : sendHtml(reply, errorPage(request, new AppError('route_not_found')));
}
