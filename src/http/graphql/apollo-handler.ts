/**
 * Hands a Fastify request to Apollo Server's `executeHTTPGraphQLRequest` and its answer back: what
 * `@as-integrations/fastify` does, minus its per-request costs (issue 18). Its handler copied the
 * headers through `Object.entries` into a HeaderMap that lowercased each name again, and built a
 * `new URL` only to read the query string. Node's header names are already lowercase and joined (but
 * `set-cookie`), so the HeaderMap is filled once, as they are; the query string is the URL's tail.
 * The context function is the request's bound one. (Production runs the compiled build, which keeps
 * no function names: the shapes once chosen because tsx keeps them no longer matter there, issue 26.)
 */
import { Readable } from 'node:stream';
import { HeaderMap, type ApolloServer, type BaseContext, type HTTPGraphQLRequest } from '@apollo/server';
import type { FastifyReply, FastifyRequest } from 'fastify';

export function apolloHandler<Context extends BaseContext>(
  apollo: ApolloServer<Context>,
  context: (request: FastifyRequest) => Promise<Context>,
): (request: FastifyRequest, reply: FastifyReply) => Promise<unknown> {
  apollo.assertStarted('apolloHandler()');
  async function handle(request: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const response = await apollo.executeHTTPGraphQLRequest({ httpGraphQLRequest: graphQLRequestOf(request), context: context.bind(null, request) });
    for (const entry of response.headers) void reply.header(entry[0], entry[1]);
    if (response.status !== undefined && response.status !== 200) void reply.code(response.status);
    if (response.body.kind === 'complete') return response.body.string;
    return reply.send(Readable.from(response.body.asyncIterator));
  }
  return handle;
}

/** HeaderMap.set would lowercase each name again; Node's are lowercase already. */
const setHeader = Map.prototype.set;

export function graphQLRequestOf(request: FastifyRequest): HTTPGraphQLRequest {
  const headers = new HeaderMap();
  const raw = request.headers;
  for (const name in raw) {
    const value = raw[name];
    if (value) setHeader.call(headers, name, Array.isArray(value) ? value.join(', ') : value);
  }
  return { method: request.method, headers, search: searchOf(request.url), body: request.body };
}

/** `?…` of a request target (what `new URL(url).search` gives Apollo's URLSearchParams), '' without one. */
function searchOf(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return '';
  const hash = url.indexOf('#', q);
  const search = hash < 0 ? url.slice(q) : url.slice(q, hash);
  return search === '?' ? '' : search;
}
