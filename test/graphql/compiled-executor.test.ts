import { ApolloServer, HeaderMap } from '@apollo/server';
import { GraphQLError, GraphQLInt, GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compiledExecutor } from '../../src/http/graphql/compiled-executor.js';

/**
 * Apollo Server executing through graphql-jit (src/http/graphql/compiled-executor.ts) answers as it
 * does with graphql-js: resolvers run compiled, field errors keep their original error (what the
 * gateway's formatError reads) and `extensions`, and request errors (variables) are graphql-js' own.
 */
class Refused extends Error {
  readonly extensions = { code: 'FORBIDDEN' };
}

const stacks: string[] = [];
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({
    name: 'Query',
    fields: {
      hello: { type: GraphQLString, resolve: () => (stacks.push(new Error().stack ?? ''), 'world') },
      double: { type: GraphQLInt, args: { n: { type: new GraphQLNonNull(GraphQLInt) } }, resolve: (_, { n }: { n: number }) => 2 * n },
      refused: { type: GraphQLString, resolve: () => Promise.reject(new Refused('no')) },
      broken: {
        type: GraphQLString,
        resolve: () => {
          throw new Error('boom');
        },
      },
    },
  }),
});

describe('the compiled executor behind Apollo Server', () => {
  const seen: unknown[] = [];
  let apollo: ApolloServer;
  beforeAll(async () => {
    apollo = new ApolloServer({
      gateway: compiledExecutor(schema),
      formatError: (formatted, error) => (seen.push(error), formatted),
      logger: { debug() {}, info() {}, warn() {}, error() {} },
    });
    await apollo.start();
  });
  afterAll(() => apollo.stop());

  const post = async (query: string, variables?: Record<string, unknown>) => {
    const res = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: 'POST', headers: new HeaderMap([['content-type', 'application/json']]), search: '', body: variables ? { query, variables } : { query } },
      context: async () => ({}),
    });
    return { status: res.status ?? 200, body: res.body.kind === 'complete' ? JSON.parse(res.body.string) : null };
  };

  it('runs resolvers from the compiled query, not graphql-js, and the same document again from its compiled function', async () => {
    expect(await post('{ hello }')).toEqual({ status: 200, body: { data: { hello: 'world' } } });
    expect(await post('{ hello }')).toEqual({ status: 200, body: { data: { hello: 'world' } } });
    expect(stacks).toHaveLength(2);
    for (const stack of stacks) expect(stack).not.toMatch(/graphql[\\/]execution[\\/]execute/);
  });

  it('keeps a field error graphql-js shaped: message, locations, path, extensions and the original error', async () => {
    seen.length = 0;
    const { status, body } = await post('query {\n  hello\n  refused\n  broken\n}');
    expect(status).toBe(200);
    expect(body).toEqual({
      data: { hello: 'world', refused: null, broken: null },
      errors: [
        // jit's own errors have no extensions object: Apollo's normaliser would fail on it and answer
        // a bare "Internal server error" instead of running formatError.
        { message: 'boom', locations: [{ line: 4, column: 3 }], path: ['broken'], extensions: { code: 'INTERNAL_SERVER_ERROR' } },
        { message: 'no', locations: [{ line: 3, column: 3 }], path: ['refused'], extensions: { code: 'FORBIDDEN' } },
      ],
    });
    // In the order they happened (the thrown one at once, the rejected one a tick later), as graphql-js.
    expect(seen.map((e) => e instanceof GraphQLError && e.originalError?.constructor)).toEqual([Error, Refused]);
  });

  it('answers bad variables with graphql-js’ own request errors (400 BAD_USER_INPUT), running nothing', async () => {
    const { status, body } = await post('query($n: Int!) { double(n: $n) }', { n: 'x' });
    expect(status).toBe(400);
    expect(body.errors).toEqual([
      expect.objectContaining({ message: 'Variable "$n" got invalid value "x"; Int cannot represent non-integer value: "x"', extensions: expect.objectContaining({ code: 'BAD_USER_INPUT' }) }),
    ]);
    expect(await post('query($n: Int!) { double(n: $n) }', { n: 21 })).toEqual({ status: 200, body: { data: { double: 42 } } });
  });
});
