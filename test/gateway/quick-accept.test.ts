import { describe, expect, it } from 'vitest';
import { keywordSchema, lookupRequestSchema } from '../../src/domain/definitions/validation.js';
import { quickAcceptOf } from '../../src/domain/validation.js';

// A schema's quick test lets the hot path skip zod: it must never pass a value zod refuses or would
// change. Checked against zod itself over the kinds of input a client can send.
const MAX = 10;
const strings = [
  'cat',
  ' cat ',
  'a b',
  '',
  ' ',
  '\t\n',
  '\u00a0',
  '\ufeff',
  '\u2028x',
  'x'.repeat(MAX),
  'x'.repeat(MAX + 1),
  ` ${'x'.repeat(MAX)} `,
  '🐈'.repeat(5),
  '🐈'.repeat(6),
  '🐈'.repeat(11),
  'e\u0301',
];
const others: unknown[] = [undefined, null, 0, 1, true, [], ['cat'], {}, { keyword: 'cat' }];

describe('quick tests agree with zod', () => {
  it('keyword: every value the quick test passes, zod passes unchanged; the common case is quick', () => {
    const schema = keywordSchema(MAX);
    const quick = quickAcceptOf(schema)!;
    expect(quick).toBeTypeOf('function');
    let passed = 0;
    for (const input of [...strings, ...others]) {
      if (!quick(input)) continue;
      passed++;
      const parsed = schema.safeParse(input);
      expect(parsed.success, JSON.stringify(input)).toBe(true);
      expect(parsed.data).toBe(input);
    }
    expect(quick('cat')).toBe(true);
    expect(quick(' cat ')).toBe(true);
    expect(passed).toBeGreaterThan(3);
    // Refused by zod, so never quick.
    for (const input of ['', ' ', '\u00a0', 'x'.repeat(MAX + 1), 5, null, undefined]) expect(quick(input)).toBe(false);
  });

  it('lookup body: every body the quick test passes, zod passes as an equal object', () => {
    const schema = lookupRequestSchema(MAX);
    const quick = quickAcceptOf(schema)!;
    expect(quick).toBeTypeOf('function');
    const bodies: unknown[] = [
      ...others,
      ...strings.map((keyword) => ({ keyword })),
      ...strings.map((keyword) => ({ keyword, extra: 1 })),
      ...others.map((keyword) => ({ keyword })),
      Object.assign(Object.create(null) as object, { keyword: 'cat' }),
      JSON.parse('{"keyword":"cat","__proto__":{"x":1}}'),
      [{ keyword: 'cat' }],
    ];
    let passed = 0;
    for (const body of bodies) {
      if (!quick(body)) continue;
      passed++;
      const parsed = schema.safeParse(body);
      expect(parsed.success, JSON.stringify(body)).toBe(true);
      expect(parsed.data).toEqual(body);
    }
    expect(quick({ keyword: 'serendipity' })).toBe(false); // longer than MAX units: zod decides
    expect(quick({ keyword: 'cat' })).toBe(true);
    expect(passed).toBeGreaterThan(3);
    // Extra fields, a missing or blank keyword, or not a plain object: zod decides (and names the rule).
    expect(quick({ keyword: 'cat', extra: 1 })).toBe(false);
    expect(quick({})).toBe(false);
    expect(quick({ keyword: ' ' })).toBe(false);
    expect(quick([{ keyword: 'cat' }])).toBe(false);
  });
});
