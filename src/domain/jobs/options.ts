import { z } from 'zod';
import { characters, parseWith } from '../validation.js';

/** Output formats of the contract, in their REST spelling; PNG is the default. */
export const IMAGE_FORMATS = ['png', 'webp', 'jpeg'] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];

export const CONTENT_TYPES: Readonly<Record<ImageFormat, string>> = { png: 'image/png', webp: 'image/webp', jpeg: 'image/jpeg' };

export const MAX_SEED = 2_147_483_647;
export const MAX_NEGATIVE_PROMPT_LENGTH = 2000;

/** What a deployment offers (its image provider declares it): `GET /api/playground/images/options`. */
export interface ImageOffer {
  sizes: string[];
  defaultSize: string;
  formats: ImageFormat[];
  seed: boolean;
  negativePrompt: boolean;
}

/** A job's options as stored and echoed, the defaults filled in. */
export interface ImageOptions {
  size: string;
  format: ImageFormat;
  seed: number | null;
  negativePrompt: string | null;
}

/** `"512x256"` → its dimensions; null for anything else. */
export function parseSize(size: string): { width: number; height: number } | null {
  const m = /^([1-9][0-9]{0,4})x([1-9][0-9]{0,4})$/.exec(size);
  return m ? { width: Number(m[1]), height: Number(m[2]) } : null;
}

const list = (values: readonly string[]) => values.join(', ');

/**
 * The options' rules for one offer, with messages naming the field and what is allowed. Used by the
 * REST route (request validation, the OpenAPI document) and by the domain for every door.
 */
export function imageOptionsShape(offer: ImageOffer) {
  const sizes = offer.sizes as [string, ...string[]];
  const formats = offer.formats as [ImageFormat, ...ImageFormat[]];
  const seed = offer.seed
    ? z
        .int({ error: `must be an integer from 0 to ${MAX_SEED}` })
        .min(0, `must be an integer from 0 to ${MAX_SEED}`)
        .max(MAX_SEED, `must be an integer from 0 to ${MAX_SEED}`)
        .meta({ description: `Image i of the job (from 0) uses seed + i: the same prompt, seed, size and format make the same image.` })
    : z.never({ error: 'is not supported by this deployment (imageOptions.seed is false)' }).meta({ description: 'Not offered by this deployment.' });
  const negativePrompt = offer.negativePrompt
    ? z
        .string({ error: 'must be a string' })
        .check((ctx) => {
          const n = characters(ctx.value);
          if (n > MAX_NEGATIVE_PROMPT_LENGTH) ctx.issues.push({ code: 'custom', message: `must be at most ${MAX_NEGATIVE_PROMPT_LENGTH} characters (got ${n})`, input: ctx.value });
        })
        .meta({ maxLength: MAX_NEGATIVE_PROMPT_LENGTH, description: 'What the image should not show.' })
    : z.never({ error: 'is not supported by this deployment (imageOptions.negativePrompt is false)' }).meta({ description: 'Not offered by this deployment.' });
  return {
    size: z
      .enum(sizes, { error: `must be one of ${list(sizes)}` })
      .nullable()
      .optional()
      .meta({ description: `WIDTHxHEIGHT, one of the sizes offered; default ${offer.defaultSize}.` }),
    format: z
      .enum(formats, { error: `must be one of ${list(formats)}` })
      .nullable()
      .optional()
      .meta({ description: 'Encoding of the images; default png.' }),
    seed: seed.nullable().optional(),
    negativePrompt: negativePrompt.nullable().optional(),
  };
}

const schemas = new WeakMap<ImageOffer, z.ZodType<Partial<ImageOptions>>>();

/** Validates options (anything a door received; absent = all defaults) and fills in the defaults. */
export function parseImageOptions(input: unknown, offer: ImageOffer): ImageOptions {
  let schema = schemas.get(offer);
  if (!schema) schemas.set(offer, (schema = z.object(imageOptionsShape(offer), { error: 'must be an object' }) as z.ZodType<Partial<ImageOptions>>));
  const given = input === undefined || input === null ? {} : parseWith(schema, input, 'body');
  const negative = given.negativePrompt?.trim();
  return {
    size: given.size ?? offer.defaultSize,
    format: given.format ?? 'png',
    seed: given.seed ?? null,
    negativePrompt: negative ? negative : null,
  };
}

/** Options of a job stored before options existed: what the deployment drew then (its default size, PNG). */
export function legacyOptions(offer: ImageOffer): ImageOptions {
  return { size: offer.defaultSize, format: 'png', seed: null, negativePrompt: null };
}

/**
 * The seed of image `index` of a job: `seed + index`, or null without a seed. Past MAX_SEED it wraps to
 * 0, so every image's seed is itself a valid seed (and a GraphQL Int).
 */
export function seedOf(options: ImageOptions, index: number): number | null {
  return options.seed === null ? null : (options.seed + index) % (MAX_SEED + 1);
}
