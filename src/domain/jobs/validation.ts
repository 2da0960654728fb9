import { invalid } from '../errors.js';

export interface PromptLimits {
  maxPrompts: number;
  maxPromptLength: number;
}

/**
 * The contract's checks for `prompts`, in its order: missing, not an array, empty, too many, then per
 * entry: not a string, empty after trimming, too long. Returns the trimmed prompts.
 */
export function parsePrompts(input: unknown, limits: PromptLimits): string[] {
  if (input === undefined || input === null) throw invalid('prompts', 'prompts is required');
  if (!Array.isArray(input)) throw invalid('prompts', 'prompts must be an array of strings');
  if (input.length === 0) throw invalid('prompts', 'prompts must not be empty');
  if (input.length > limits.maxPrompts) {
    throw invalid('prompts', `prompts must have at most ${limits.maxPrompts} entries (got ${input.length})`);
  }
  return input.map((entry: unknown, i) => {
    const field = `prompts[${i}]`;
    if (typeof entry !== 'string') throw invalid(field, `${field} must be a string`);
    const prompt = entry.trim();
    if (prompt.length === 0) throw invalid(field, `${field} must not be empty`);
    // Characters, not UTF-16 code units: an emoji counts once.
    let length = 0;
    for (const _ of prompt) length++;
    if (length > limits.maxPromptLength) {
      throw invalid(field, `${field} must be at most ${limits.maxPromptLength} characters (got ${length})`);
    }
    return prompt;
  });
}

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A job id as issued (lowercase UUID v4); anything else cannot name a job. */
export function isJobId(value: unknown): value is string {
  return typeof value === 'string' && UUID_V4.test(value);
}
