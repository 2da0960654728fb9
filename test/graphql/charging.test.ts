import { getOperationAST, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { chargingFields } from '../../src/graphql/charging.js';

const count = (query: string) => {
  const document = parse(query);
  return chargingFields(document, getOperationAST(document)!);
};

describe('chargingFields', () => {
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
    for (let i = 0; i < 2; i++) expect([chargingFields(document, one), chargingFields(document, two)]).toEqual([1, 2]);
  });
});
