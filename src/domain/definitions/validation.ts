import { invalid } from '../errors.js';

/**
 * The contract's checks for `keyword`, in its order: missing, not a string, empty after trimming, too
 * long. Returns the trimmed keyword.
 */
export function parseKeyword(input: unknown, maxLength: number): string {
  if (input === undefined || input === null) throw invalid('keyword', 'keyword is required');
  if (typeof input !== 'string') throw invalid('keyword', 'keyword must be a string');
  const keyword = input.trim();
  if (keyword.length === 0) throw invalid('keyword', 'keyword must not be empty');
  // Characters, not UTF-16 code units: an emoji counts once.
  let length = 0;
  for (const _ of keyword) length++;
  if (length > maxLength) throw invalid('keyword', `keyword must be at most ${maxLength} characters (got ${length})`);
  return keyword;
}
