import { GraphQLScalarType } from 'graphql';
import { Field, GraphQLISODateTime, ID, InputType, Int, ObjectType, registerEnumType } from 'type-graphql';
import { IMAGE_FORMATS, MAX_NEGATIVE_PROMPT_LENGTH, MAX_SEED, type ImageFormat } from '../domain/jobs/options.js';
import { IMAGE_STATUSES, JOB_STATUSES, type ImageStatus, type JobStatus } from '../domain/jobs/types.js';
import { KEY_PERMISSIONS, type KeyPermission } from '../domain/keys/permissions.js';
import { KEY_REFILLS, type KeyRefill } from '../domain/keys/records.js';

/**
 * GraphQL object types. Every decorator names its type explicitly: esbuild (tsx, vitest) emits no
 * decorator metadata. The fields mirror the REST bodies of the contract one for one; enum values are
 * the REST strings (`queued`, `succeeded`, …) so both doors speak the same words. Every type, field
 * and enum value has a description: front-end tools (GraphiQL docs, codegen comments) show them.
 */

/**
 * Dates as codegen and browsers want them: an RFC 3339 string in UTC, with `@specifiedBy` so tools
 * know the format, and `codegenScalarType` for code-first codegen (SDL users map it in their config).
 * The wire format is type-graphql's own date scalar, which the gateway only ever outputs. Every date
 * field uses this one: type-graphql's GraphQLISODateTime is another scalar of the same name, and the
 * schema would not build with both.
 */
export const DateTimeScalar = new GraphQLScalarType({
  ...GraphQLISODateTime.toConfig(),
  description:
    'An instant as an ISO 8601 (RFC 3339) date-time string in UTC with milliseconds, e.g. `2026-01-31T09:30:00.000Z`. ' +
    "Output only. In TypeScript it is a `string` (graphql-codegen: `scalars: { DateTimeISO: 'string' }`); parse it with `new Date(value)`.",
  specifiedByURL: 'https://scalars.graphql.org/andimarek/date-time',
  extensions: { codegenScalarType: 'string' },
});

const enumOf = <T extends string>(values: readonly T[]) =>
  Object.fromEntries(values.map((v) => [v, v])) as { [K in T]: K };

/** One description per state: a state added to the domain fails to compile until it is described here. */
const describedValues = <T extends string>(descriptions: Record<T, string>) =>
  Object.fromEntries(Object.entries(descriptions).map(([value, description]) => [value, { description }])) as Record<T, { description: string }>;

export const JobStatusEnum = enumOf<JobStatus>(JOB_STATUSES);
registerEnumType(JobStatusEnum, {
  name: 'JobStatus',
  description: 'State of an image job, the REST strings: queued → running → completed or failed, or canceled (`cancelJob`).',
  valuesConfig: describedValues<JobStatus>({
    queued: 'Accepted and charged; no image has started yet.',
    running: 'At least one image has started and not every image has reached a final state (also while a canceled job waits for a running image).',
    completed: 'Final: every image reached a final state and at least one succeeded.',
    failed: 'Final: every image failed (each failed image was refunded).',
    canceled: 'Final: canceled (`cancelJob`); images that had not started were canceled and refunded, the ones running then finished.',
  }),
});

export const ImageStatusEnum = enumOf<ImageStatus>(IMAGE_STATUSES);
registerEnumType(ImageStatusEnum, {
  name: 'ImageStatus',
  description: 'State of one image of a job, the REST strings: queued → running → succeeded or failed, or queued → canceled.',
  valuesConfig: describedValues<ImageStatus>({
    queued: 'Waiting for a worker.',
    running: 'A worker is generating it.',
    succeeded: 'Final: generated; `url` serves it.',
    failed: 'Final: generation failed; `error` says why and its credit was refunded.',
    canceled: 'Final: its job was canceled before it started; its credit was refunded.',
  }),
});

/** Descriptions of the root types, which type-graphql builds without one (applied by schema.ts). */
export const ROOT_TYPE_DESCRIPTIONS = {
  Query: 'Reads: free of charge.',
  Mutation: 'Operations that act; each says what it charges. The charging ones accept an `idempotencyKey`, so that a retry is never charged twice.',
  Subscription: 'Pushed results, over WebSocket only (graphql-transport-ws, the graphql-ws protocol) at /graphql.',
} as const;

/** GraphQL spells the formats in capitals (`PNG`); their values are the REST strings (`png`). */
export const ImageFormatEnum = Object.fromEntries(IMAGE_FORMATS.map((f) => [f.toUpperCase(), f])) as { [K in ImageFormat as Uppercase<K>]: K };
registerEnumType(ImageFormatEnum, {
  name: 'ImageFormat',
  description: 'Encoding of an image.',
  valuesConfig: { PNG: { description: 'PNG (`image/png`), the default.' }, WEBP: { description: 'WebP (`image/webp`).' }, JPEG: { description: 'JPEG (`image/jpeg`).' } },
});

@InputType('ImageOptionsInput', { description: 'How the images of a job are made; every field optional. What this deployment offers: `imageOptions`.' })
export class ImageOptionsInput {
  @Field(() => String, { nullable: true, description: 'WIDTHxHEIGHT, one of `imageOptions.sizes`; default `imageOptions.defaultSize`.' })
  size?: string | null;

  @Field(() => ImageFormatEnum, { nullable: true, description: 'Default PNG.' })
  format?: ImageFormat | null;

  @Field(() => Int, {
    nullable: true,
    description: `0 to ${MAX_SEED}, where \`imageOptions.seed\` is true. Image i of the job (from 0) uses seed + i: the same prompt, seed, size and format make the same image.`,
  })
  seed?: number | null;

  @Field(() => String, { nullable: true, description: `What the images should not show, at most ${MAX_NEGATIVE_PROMPT_LENGTH} characters, where \`imageOptions.negativePrompt\` is true.` })
  negativePrompt?: string | null;
}

@ObjectType('ImageOptions', { description: 'What this deployment offers for `generate(options:)`.' })
export class ImageOfferType {
  @Field(() => [String], { description: 'The sizes `size` may name (WIDTHxHEIGHT).' })
  sizes!: string[];

  @Field(() => String, { description: 'The size of an image when `size` is not given.' })
  defaultSize!: string;

  @Field(() => [ImageFormatEnum], { description: 'The formats `format` may name.' })
  formats!: ImageFormat[];

  @Field(() => Boolean, { description: 'Whether `seed` is taken (BAD_USER_INPUT otherwise).' })
  seed!: boolean;

  @Field(() => Boolean, { description: 'Whether `negativePrompt` is taken (BAD_USER_INPUT otherwise).' })
  negativePrompt!: boolean;
}

@ObjectType('JobOptions', { description: 'The options a job was started with, the defaults filled in.' })
export class JobOptionsType {
  @Field(() => String, { description: 'WIDTHxHEIGHT.' })
  size!: string;

  @Field(() => ImageFormatEnum, { description: 'Encoding of its images.' })
  format!: ImageFormat;

  @Field(() => Int, { nullable: true, description: 'The seed of image 0 (image i uses seed + i); null without one.' })
  seed!: number | null;

  @Field(() => String, { nullable: true, description: 'What the images should not show; null without one.' })
  negativePrompt!: string | null;
}

@ObjectType('JobImage', {
  description:
    "One image of a job, in prompt order. It has no `id`: it only exists inside its Job, so client caches store it within the job's entry and replace the list whenever the job is written.",
})
export class JobImageType {
  @Field(() => Int, { description: 'Position of the prompt in the request, from 0.' })
  index!: number;

  @Field(() => String, { description: 'The prompt, trimmed.' })
  prompt!: string;

  @Field(() => ImageStatusEnum, { description: 'State of this image.' })
  status!: ImageStatus;

  @Field(() => String, {
    nullable: true,
    description:
      'Signed, expiring URL of the image (fetch it with a plain GET, no Authorization; valid at least one hour); null until the image succeeded, and once it expired.',
  })
  url!: string | null;

  @Field(() => String, { nullable: true, description: 'Why the image failed; null unless it failed.' })
  error!: string | null;

  @Field(() => Int, { description: 'Width in pixels.' })
  width!: number;

  @Field(() => Int, { description: 'Height in pixels.' })
  height!: number;

  @Field(() => String, { description: '`image/png`, `image/webp` or `image/jpeg`: what `url` serves.' })
  contentType!: string;

  @Field(() => Int, { nullable: true, description: "Its seed (the job's seed + index); null without one." })
  seed!: number | null;

  @Field(() => Boolean, { description: 'Older than the retention (IMAGE_RETENTION): its bytes are deleted and `url` is null.' })
  expired!: boolean;
}

@ObjectType('Job', {
  description:
    'An image generation job: the same fields as GET /api/playground/images/{jobId}. Normalised by client caches (Apollo Client, urql) by `__typename` and `id`: select `id` wherever a Job is selected.',
})
export class JobType {
  @Field(() => ID, { description: 'The job id (a UUID v4), the same value as `jobId`: the cache key of Apollo Client and urql.' })
  id!: string;

  @Field(() => ID, { description: 'The job id (a UUID v4), as in REST. Kept for compatibility: `id` holds the same value and is the cache key.' })
  jobId!: string;

  @Field(() => JobStatusEnum, { description: 'State of the job.' })
  status!: JobStatus;

  @Field(() => Int, { description: 'Images in the job: one per prompt.' })
  totalImages!: number;

  @Field(() => Int, { description: 'Images that succeeded so far.' })
  succeededImages!: number;

  @Field(() => Int, { description: 'Images that failed so far (each refunded).' })
  failedImages!: number;

  @Field(() => Int, { description: 'Credits charged when the job started: one per prompt.' })
  creditsUsed!: number;

  @Field(() => Int, { description: 'Credits given back so far: one per failed or canceled image, each once.' })
  creditsRefunded!: number;

  @Field(() => DateTimeScalar, { description: 'When the job was accepted.' })
  createdAt!: Date;

  @Field(() => DateTimeScalar, { description: 'When the job or one of its images last changed.' })
  updatedAt!: Date;

  @Field(() => DateTimeScalar, { nullable: true, description: 'When the job reached completed, failed or canceled; null until then.' })
  completedAt!: Date | null;

  @Field(() => JobOptionsType, { description: 'Size, format, seed and negative prompt of its images.' })
  options!: JobOptionsType;

  @Field(() => [JobImageType], { description: 'One entry per prompt, in prompt order.' })
  images!: JobImageType[];
}

@ObjectType('GenerateResult', { description: 'A started job. creditsUsed = totalImages = number of prompts.' })
export class GenerateResultType {
  @Field(() => ID, { description: 'The id of the created job (the same as `job.id`).' })
  jobId!: string;

  @Field(() => Int, { description: 'Images in the job: one per prompt.' })
  totalImages!: number;

  @Field(() => Int, { description: 'Credits charged: one per prompt.' })
  creditsUsed!: number;

  @Field(() => Int, { description: 'Balance after the deduction.' })
  credits!: number;

  @Field(() => JobType, {
    description: 'The created job as it is now (usually queued; further along when a worker already took it or the request is a replay). Select `id` so that client caches store it.',
  })
  job!: JobType;
}

@ObjectType('LookupResult', { description: 'A definition, charged one credit.' })
export class LookupResultType {
  @Field(() => String, { description: 'The requested keyword, trimmed.' })
  keyword!: string;

  @Field(() => String, { description: "The definition; when the dictionary has none, a text that says so (still charged)." })
  definition!: string;

  @Field(() => Int, { description: 'Balance after the deduction.' })
  credits!: number;
}

/** The caller's account; `credits` is resolved through the per-operation balance loader. */
@ObjectType('Account', { description: "The caller's account: the account of the credential that authenticated the request." })
export class AccountType {
  @Field(() => ID, { description: 'The account id: the cache key of Apollo Client and urql.' })
  id!: string;
}

export const KeyRefillEnum = enumOf<KeyRefill>(KEY_REFILLS);
registerEnumType(KeyRefillEnum, {
  name: 'KeyRefill',
  description: "How a key's credit limit comes back: a reset to the limit (not an addition) at a UTC boundary.",
  valuesConfig: describedValues<KeyRefill>({
    daily: 'Credits left are set back to the limit at 00:00 UTC every day.',
    monthly: 'Credits left are set back to the limit at 00:00 UTC on the 1st of every month.',
  }),
});

export const KeyPermissionEnum = enumOf<KeyPermission>(KEY_PERMISSIONS);
registerEnumType(KeyPermissionEnum, {
  name: 'KeyPermission',
  description: 'What an API key may do (its client tokens can have no more).',
  valuesConfig: describedValues<KeyPermission>({
    lookup: 'Definition lookups (`lookup`).',
    generate: 'Image generation and cancellation (`generate`, `cancelJob`).',
    read: 'Reading: `me`, `job`, `jobs`, `jobStatus`.',
    client_tokens: 'Minting client tokens (`createClientToken`).',
    webhooks: 'Managing webhook endpoints.',
  }),
});

@ObjectType('ApiKey', { description: 'An API key and its settings, as the console and the CLI set them. The key itself is never shown again after creation.' })
export class ApiKeyType {
  @Field(() => ID, { description: "The key's id." })
  id!: string;

  @Field(() => String, { description: 'The name given at creation.' })
  name!: string;

  @Field(() => String, { description: 'The first 12 characters of the key (`wi_live_` + 4).' })
  prefix!: string;

  @Field(() => DateTimeScalar, { nullable: true, description: 'From this instant the key is refused (`api_key_expired`); null: it never expires.' })
  expiresAt!: Date | null;

  @Field(() => Int, { nullable: true, description: 'The most the key may spend (per refill period when it refills); null: no limit beyond the balance.' })
  creditLimit!: number | null;

  @Field(() => Int, { nullable: true, description: 'What the key may still spend now (a refill that is due counted); null without a credit limit.' })
  creditsLeft!: number | null;

  @Field(() => KeyRefillEnum, { nullable: true, description: 'When credits left are reset to the limit; null: never.' })
  refill!: KeyRefill | null;

  @Field(() => Int, { nullable: true, description: "This key's own requests per minute; null: the server's RATE_LIMIT_PER_MINUTE." })
  rateLimitPerMinute!: number | null;

  @Field(() => [KeyPermissionEnum], { description: 'What the key may do.' })
  permissions!: KeyPermission[];
}

@ObjectType('PageInfo', { description: 'Where a page of a list ends.' })
export class PageInfoType {
  @Field(() => Boolean, { description: 'True when there are more items after this page.' })
  hasNextPage!: boolean;

  @Field(() => String, { nullable: true, description: 'Pass as `after` to get the next page; null on the last page.' })
  endCursor!: string | null;
}

@ObjectType('JobConnection', { description: "A page of the caller's jobs, newest first." })
export class JobConnectionType {
  @Field(() => [JobType], { description: 'The jobs of this page, newest first.' })
  nodes!: JobType[];

  @Field(() => PageInfoType, { description: 'Whether more jobs follow, and the cursor to get them.' })
  pageInfo!: PageInfoType;
}
