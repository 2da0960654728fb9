import { getOperationAST, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { rootFields } from '../../src/graphql/root-fields.js';

const count = (query: string) => {
  const document = parse(query);
  return rootFields(document, getOperationAST(document)!).rateUnits;
};

describe('rootFields: rate-limit units from the operation catalog', () => {
  it.each([
    ['{ me { credits } }', 0],
    ['mutation { lookup(keyword: "a") { credits } }', 1],
    ['mutation { a: lookup(keyword: "a") { credits } b: lookup(keyword: "b") { credits } c: generate(prompts: ["x"]) { credits } }', 3],
    ['mutation { ... on Mutation { a: lookup(keyword: "a") { credits } b: lookup(keyword: "b") { credits } } }', 2],
    ['mutation { ...L ...L } fragment L on Mutation { a: lookup(keyword: "a") { credits } }', 1],
    ['mutation { createClientToken(origins: ["http://a.b"]) { token } }', 0],
    [`mutation { ${Array.from({ length: 15 }, (_, i) => `l${i}: lookup(keyword: "w${i}") { credits }`).join(' ')} }`, 15],
  ])('%s → %i', (query, expected) => {
    expect(count(query)).toBe(expected);
  });

  it('each operation of a document keeps its own count when asked again (counted once per operation node)', () => {
    const document = parse('mutation One { lookup(keyword: "a") { credits } } mutation Two { a: lookup(keyword: "a") { credits } b: generate(prompts: ["x"]) { credits } }');
    const one = getOperationAST(document, 'One')!;
    const two = getOperationAST(document, 'Two')!;
    for (let i = 0; i < 2; i++) expect([rootFields(document, one).rateUnits, rootFields(document, two).rateUnits]).toEqual([1, 2]);
  });

  it('names the operations and permissions of the root fields; introspection fields are neither operations nor unknown', () => {
    const document = parse('{ __typename me { credits } j: job(id: "x") { id } jobs { nodes { id } } }');
    expect(rootFields(document, getOperationAST(document)!)).toEqual({ operations: ['me', 'job', 'jobs'], unknown: [], permissions: ['read'], rateUnits: 0 });
  });

  it('reports a root field the catalog does not know (the admission refuses it)', () => {
    const document = parse('mutation { lookup(keyword: "a") { credits } launchRockets { id } }');
    expect(rootFields(document, getOperationAST(document)!)).toMatchObject({ operations: ['lookup'], unknown: ['launchRockets'], permissions: ['lookup'] });
  });
});
