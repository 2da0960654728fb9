import { describe, expect, it } from 'vitest';
import { parseImageOptions, seedOf } from '../../src/domain/jobs/options.js';
import { BUILTIN_OFFER } from '../../src/providers/images/builtin.js';

describe('image options', () => {
  it('fills the defaults, trims the negative prompt, and treats null as not given', () => {
    expect(parseImageOptions(undefined, BUILTIN_OFFER)).toEqual({ size: '256x256', format: 'png', seed: null, negativePrompt: null });
    expect(parseImageOptions({ size: null, format: null, seed: null, negativePrompt: '  ' }, BUILTIN_OFFER)).toEqual({ size: '256x256', format: 'png', seed: null, negativePrompt: null });
    expect(parseImageOptions({ seed: 0, negativePrompt: ' dogs ' }, BUILTIN_OFFER)).toMatchObject({ seed: 0, negativePrompt: 'dogs' });
  });

  it('refuses a seed or negative prompt where the offer has none, naming the field', () => {
    const closed = { ...BUILTIN_OFFER, seed: false, negativePrompt: false };
    expect(() => parseImageOptions({ seed: 1 }, closed)).toThrow(/^seed is not supported by this deployment/);
    expect(() => parseImageOptions({ negativePrompt: 'x' }, closed)).toThrow(/^negativePrompt is not supported/);
    expect(() => parseImageOptions('big', BUILTIN_OFFER)).toThrow(/must be an object/);
  });

  it('image i uses seed + i, wrapping past the largest seed to 0', () => {
    const options = parseImageOptions({ seed: 2147483646 }, BUILTIN_OFFER);
    expect([0, 1, 2, 3].map((i) => seedOf(options, i))).toEqual([2147483646, 2147483647, 0, 1]);
    expect(seedOf(parseImageOptions({}, BUILTIN_OFFER), 5)).toBeNull();
  });
});
