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

/**
 * The same address again, navigated from this page (a same-origin navigation, which carries the
 * session cookie): a meta refresh, so it works without JavaScript, and a link as a fallback.
 */
export function continuePage(url: string): Html {
  return bare(
    'Continue',
    html`<meta http-equiv="refresh" content="0;url=${url}"><div class="card narrow"><h1>Continue</h1><p><a href="${url}">Continue to the console</a></p></div>`,
  );
}
