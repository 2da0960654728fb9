import { z } from 'zod';
import { parseWith, trimmedText, withQuickAccept } from '../validation.js';

/**
 * The contract's rules for `keyword`, in its order: missing, not a string, empty after trimming, too
 * long (in characters, after trimming).
 */
export function keywordSchema(maxLength: number) {
  const schema = trimmedText(
    maxLength,
    (input) => (input === undefined || input === null ? 'is required' : 'must be a string'),
    `The word or phrase to define: at most ${maxLength} characters once surrounding whitespace is trimmed. One credit.`,
  );
  return withQuickAccept(schema, (input) => plainKeyword(input, maxLength));
}

/**
 * `POST /api/playground/query`: a body that is JSON but not an object cannot hold a keyword. Quick
 * test: an object whose only field is a keyword the rules accept (zod's output is then an equal object).
 */
export function lookupRequestSchema(maxLength: number) {
  const schema = z.object({ keyword: keywordSchema(maxLength) }, { error: 'must be a JSON object with a keyword field' });
  return withQuickAccept(schema, (body) => {
    if (body === null || typeof body !== 'object' || Array.isArray(body) || Object.getPrototypeOf(body) !== Object.prototype) return false;
    let fields = 0;
    for (const _ in body) fields++;
    return fields === 1 && plainKeyword((body as { keyword?: unknown }).keyword, maxLength);
  });
}

/**
 * True only of a keyword the rules accept: a string with a non-space character (what trim leaves),
 * at most `maxLength` UTF-16 units long, so at most that many characters once trimmed. A longer one
 * may still pass, and zod decides.
 */
function plainKeyword(input: unknown, maxLength: number): boolean {
  return typeof input === 'string' && input.length <= maxLength && NOT_BLANK.test(input);
}
const NOT_BLANK = /\S/;

const schemas = new Map<number, ReturnType<typeof keywordSchema>>();

/** Validates `keyword` (anything a door received) and returns it trimmed. */
export function parseKeyword(input: unknown, maxLength: number): string {
  // Built once per limit: a schema costs far more to build than to run, and this is the hot path.
  let schema = schemas.get(maxLength);
  if (!schema) schemas.set(maxLength, (schema = keywordSchema(maxLength)));
  return parseWith(schema, input, 'keyword').trim();
}
