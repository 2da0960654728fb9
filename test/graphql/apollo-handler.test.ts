import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { graphQLRequestOf } from '../../src/http/graphql/apollo-handler.js';

/**
 * The hand-off of a Fastify request to Apollo Server (src/http/graphql/apollo-handler.ts): what
 * `@as-integrations/fastify` gave Apollo, built with less work. GET queries arrive in `search`, so it
 * must be what `new URL(url).search` was.
 */
function requestOf(url: string, headers: Record<string, string | string[] | undefined> = {}): FastifyRequest {
  return { url, method: 'GET', headers, body: undefined } as unknown as FastifyRequest;
}

describe('graphQLRequestOf', () => {
  it('passes the query string as new URL(url).search would', () => {
    for (const url of ['/graphql', '/graphql?', '/graphql?query=%7B%20me%20%7D', '/graphql?query={me}&a=1#frag', '/graphql?x=1?y=2', '/graphql#only-a-fragment']) {
      const search = graphQLRequestOf(requestOf(url)).search;
      expect(new URLSearchParams(search).toString(), url).toBe(new URLSearchParams(new URL(url, 'http://localhost/').search).toString());
    }
    expect(graphQLRequestOf(requestOf('/graphql?')).search).toBe('');
    expect(graphQLRequestOf(requestOf('/graphql?a=1#b')).search).toBe('?a=1');
  });

  it('hands Node’s lowercase headers over as they are, joining repeated ones and leaving out empty ones', () => {
    const { headers, method, body } = graphQLRequestOf(
      requestOf('/graphql', { accept: 'application/json', 'set-cookie': ['a=1', 'b=2'], 'x-empty': '', 'x-missing': undefined }),
    );
    expect([...headers]).toEqual([
      ['accept', 'application/json'],
      ['set-cookie', 'a=1, b=2'],
    ]);
    expect(headers.get('Accept')).toBe('application/json');
    expect(method).toBe('GET');
    expect(body).toBeUndefined();
  });
});
