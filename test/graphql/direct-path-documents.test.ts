import type { FastifyReply, FastifyRequest } from 'fastify';
import { GraphQLObjectType, GraphQLSchema, GraphQLString, type ValidationRule } from 'graphql';
import { describe, expect, it } from 'vitest';
import type { OperationAdmission } from '../../src/http/graphql/admission.js';
import { compiledExecution } from '../../src/http/graphql/compiled-executor.js';
import { directPath } from '../../src/http/graphql/direct-path.js';
import type { GraphQLContext } from '../../src/graphql/context.js';

/**
 * The direct path keeps each query text's parsed and validated document, bounded by count, by total
 * length and by the length of one text: a flood of distinct texts evicts the oldest, a long text is
 * answered without being kept. Validations are counted with a rule of their own (a rule runs once per
 * validation of a document).
 */
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({ name: 'Query', fields: { hello: { type: GraphQLString, resolve: () => 'world' } } }),
});

function harness(keep: { documents: number; chars: number; queryChars: number }) {
  let validations = 0;
  const counting: ValidationRule = () => {
    validations++;
    return {};
  };
  const admission: OperationAdmission = { admit: async ({ document, operation }: any, caller: any) => ({ ok: true, document, operation, principal: caller.principal, rateLimit: null }) };
  const path = directPath({
    schema,
    validationRules: [counting],
    introspection: true,
    maxTokens: 1000,
    formatError: (formatted) => formatted,
    admission,
    execute: compiledExecution(schema),
    contextOf: () => ({ principal: {} }) as unknown as GraphQLContext,
    didEncounterErrors: () => undefined,
    keep,
  });
  const ask = async (query: string) => {
    const request = { method: 'POST', body: { query }, headers: { 'content-type': 'application/json' } } as unknown as FastifyRequest;
    const sent: Record<string, string> = {};
    const reply = { header: (name: string, value: string) => ((sent[name] = value), reply), code: () => reply } as unknown as FastifyReply;
    const answer = path.answer(request, reply);
    expect(answer).toBeDefined();
    return { body: JSON.parse((await answer)!) as unknown, contentType: sent['content-type'] };
  };
  return { ask, validations: () => validations };
}

/** A distinct query text of `{ hello }` padded with spaces (no tokens). */
const text = (i: number, pad = 0) => `{ hello }${' '.repeat(i + pad)}`;

describe('the direct path’s documents', () => {
  it('validates a text once and answers it again from what it kept', async () => {
    const h = harness({ documents: 10, chars: 10_000, queryChars: 1000 });
    expect(await h.ask(text(0))).toEqual({ body: { data: { hello: 'world' } }, contentType: 'application/json; charset=utf-8' });
    await h.ask(text(0));
    await h.ask(text(0));
    expect(h.validations()).toBe(1);
  });

  it('keeps at most the count it is given: the oldest text is validated again, the newest is not', async () => {
    const h = harness({ documents: 3, chars: 10_000, queryChars: 1000 });
    for (let i = 0; i < 4; i++) await h.ask(text(i));
    expect(h.validations()).toBe(4);
    await h.ask(text(3));
    expect(h.validations()).toBe(4);
    await h.ask(text(0));
    expect(h.validations()).toBe(5);
  });

  it('keeps at most the total length it is given, and never a text over the one-text limit', async () => {
    const h = harness({ documents: 100, chars: 250, queryChars: 120 });
    // Three texts of ~110 characters: the third pushes the first out (over 250 in all).
    for (let i = 0; i < 3; i++) await h.ask(text(i, 100));
    expect(h.validations()).toBe(3);
    await h.ask(text(2, 100));
    await h.ask(text(1, 100));
    expect(h.validations()).toBe(3);
    await h.ask(text(0, 100));
    expect(h.validations()).toBe(4);
    // Over the one-text limit: answered, validated every time.
    const long = text(0, 200);
    expect((await h.ask(long)).body).toEqual({ data: { hello: 'world' } });
    await h.ask(long);
    expect(h.validations()).toBe(6);
  });
});
