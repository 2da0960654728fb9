import { z } from 'zod';
import { parseWith, trimmedText } from '../validation.js';
import { imageOptionsShape, type ImageOffer } from './options.js';

export interface PromptLimits {
  maxPrompts: number;
  maxPromptLength: number;
}

/**
 * The contract's rules for `prompts`, in its order: missing, not an array, empty, too many, then per
 * entry: not a string, empty after trimming, too long (in characters, after trimming).
 */
export function promptsSchema(limits: PromptLimits) {
  const prompt = trimmedText(limits.maxPromptLength, 'must be a string', `One image's prompt: at most ${limits.maxPromptLength} characters once surrounding whitespace is trimmed.`);
  return z
    .array(prompt, { error: (iss) => (iss.input === undefined || iss.input === null ? 'is required' : 'must be an array of strings') })
    .min(1, 'must not be empty')
    .max(limits.maxPrompts, { error: (iss) => `must have at most ${limits.maxPrompts} entries (got ${(iss.input as unknown[]).length})` })
    .meta({ description: `1 to ${limits.maxPrompts} prompts, one image each; one credit per prompt.` });
}

/**
 * `POST /api/playground/images`: the prompts and the options this deployment offers. A body that is not
 * an object holds no prompts (`prompts is required`).
 */
export function createJobRequestSchema(limits: PromptLimits, offer: ImageOffer) {
  return z.preprocess((body) => (isPlainObject(body) ? body : {}), z.object({ prompts: promptsSchema(limits), ...imageOptionsShape(offer) }));
}

const schemas = new Map<string, ReturnType<typeof promptsSchema>>();

/** Validates `prompts` (anything a door received) and returns them trimmed. */
export function parsePrompts(input: unknown, limits: PromptLimits): string[] {
  // Built once per limits: a schema costs far more to build than to run.
  const key = `${limits.maxPrompts}:${limits.maxPromptLength}`;
  let schema = schemas.get(key);
  if (!schema) schemas.set(key, (schema = promptsSchema(limits)));
  return parseWith(schema, input, 'prompts').map((p) => p.trim());
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** A job id as issued (lowercase UUID v4); anything else cannot name a job. */
export function isJobId(value: unknown): value is string {
  return typeof value === 'string' && UUID_V4.test(value);
}
