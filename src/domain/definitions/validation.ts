import { z } from 'zod';
import { parseWith, trimmedText } from '../validation.js';

/**
 * The contract's rules for `keyword`, in its order: missing, not a string, empty after trimming, too
 * long (in characters, after trimming).
 */
export function keywordSchema(maxLength: number) {
  return trimmedText(
    maxLength,
    (input) => (input === undefined || input === null ? 'is required' : 'must be a string'),
    `The word or phrase to define: at most ${maxLength} characters once surrounding whitespace is trimmed. One credit.`,
  );
}

/** `POST /api/playground/query`: a body that is JSON but not an object cannot hold a keyword. */
export function lookupRequestSchema(maxLength: number) {
  return z.object({ keyword: keywordSchema(maxLength) }, { error: 'must be a JSON object with a keyword field' });
}

const schemas = new Map<number, ReturnType<typeof keywordSchema>>();

/** Validates `keyword` (anything a door received) and returns it trimmed. */
export function parseKeyword(input: unknown, maxLength: number): string {
  // Built once per limit: a schema costs far more to build than to run, and this is the hot path.
  let schema = schemas.get(maxLength);
  if (!schema) schemas.set(maxLength, (schema = keywordSchema(maxLength)));
  return parseWith(schema, input, 'keyword').trim();
}
