/** Sending pages: HTML bodies, and the error page a person sees instead of JSON. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppError } from '../domain/errors.js';
import { contextOf } from './context.js';
import { html, type Html } from './html.js';
import { bare, page } from './views/layout.js';

export function sendHtml(reply: FastifyReply, body: Html): FastifyReply {
  return reply.type('text/html; charset=utf-8').send(body.value);
}

/** An error as a page: inside the console's layout when signed in, a bare card otherwise. */
export function errorPage(request: FastifyRequest, e: AppError): Html {
  const content = html`<p class="error" role="alert">${e.message}</p><p><a href="/console">Back to the console</a></p>`;
  const title = e.httpStatus === 404 ? 'Not found' : e.httpStatus === 403 ? 'Refused' : 'Something went wrong';
  return request.consoleCaller
    ? page(contextOf(request.consoleCaller, ''), title, content)
    : bare(title, html`<div class="card narrow"><h1>${title}</h1>${content}</div>`);
}
