import { Arg, Authorized, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import { loadConfig } from '../config.js';
import { AppError } from '../domain/errors.js';
import { answerOf, type IdempotentAttempt } from '../domain/idempotency/service.js';
import { MAX_PAGE_SIZE } from '../domain/jobs/service.js';
import type { JobCreated, JobView } from '../domain/jobs/types.js';
import type { GraphQLContext } from './context.js';
import type { ImageOffer } from '../domain/jobs/options.js';
import { AccountType, ApiKeyType, GenerateResultType, ImageOfferType, ImageOptionsInput, JobConnectionType, JobType, LookupResultType, type PageInfoType } from './types.js';

/**
 * Thin resolvers: parse arguments, call the domain service REST calls too, shape the result. Every
 * rule (validation texts, charges, visibility of jobs) lives in the services; GraphQL's type system
 * only adds what it enforces by itself (e.g. a non-string prompt never reaches a resolver).
 */

/** `jobs` without `first` (or with `first: null`, which codegen's types allow): a page of 20. */
export const DEFAULT_PAGE_SIZE = 20;

/**
 * The limits the descriptions state are the configuration's defaults: schema.graphql is one file for
 * every deployment, and a deployment may configure others (the errors then name its own).
 */
const DEFAULTS = loadConfig({});
const n = (value: number) => value.toLocaleString('en-US');

const IDEMPOTENCY_KEY =
  'Retry-safe key (1-255 printable ASCII): the first result for it is replayed for 24 h; the same key with other arguments is refused (idempotency_key_reused).';
const PROMPTS =
  `The prompts, one image and one credit each: 1 to ${n(DEFAULTS.MAX_PROMPTS)} prompts, each at most ${n(DEFAULTS.MAX_PROMPT_LENGTH)} characters ` +
  'and not empty after trimming (the default limits; MAX_PROMPTS and MAX_PROMPT_LENGTH configure them).';
const KEYWORD =
  `The word or phrase to define: not empty after trimming, at most ${n(DEFAULTS.MAX_KEYWORD_LENGTH)} characters ` +
  '(the default limit; MAX_KEYWORD_LENGTH configures it).';
const JOB_ID = "The job's id (`Job.id`, the same as `jobId`). An unknown or malformed id, or another account's job, is NOT_FOUND (job_not_found).";

@Resolver()
export class JobResolver {
  @Authorized()
  @Mutation(() => GenerateResultType, {
    description: 'Starts an image job: one image and one credit per prompt, charged at once (INSUFFICIENT_CREDITS and nothing charged when the balance is short).',
  })
  async generate(
    @Arg('prompts', () => [String], { description: PROMPTS }) prompts: string[],
    @Arg('options', () => ImageOptionsInput, { nullable: true, description: 'Size, format, seed and negative prompt; each image still costs one credit. BAD_USER_INPUT for one this deployment does not offer (`imageOptions`).' })
    options: ImageOptionsInput | null | undefined,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey: string | null | undefined,
    @Ctx() ctx: GraphQLContext,
  ): Promise<JobCreated> {
    // A plain object (type-graphql builds an instance): the options as REST would have them.
    const given = options ? { size: options.size, format: options.format, seed: options.seed, negativePrompt: options.negativePrompt } : undefined;
    // Fingerprinted as REST does: the prompts alone without options, as before options existed.
    const fingerprint = given ? { prompts, ...given } : prompts;
    return answerOf(
      await ctx.services.idempotency.run(ctx.principal, idempotencyKey, 'generate', fingerprint, (attempt: IdempotentAttempt | null) =>
        ctx.services.jobs.create(ctx.principal, prompts, attempt, given),
      ),
    );
  }

  @Authorized()
  @Query(() => ImageOfferType, { description: 'What this deployment offers for `generate(options:)`: sizes, formats, seed, negative prompt. Free.' })
  imageOptions(@Ctx() ctx: GraphQLContext): ImageOffer {
    return ctx.services.jobs.imageOptions();
  }

  @Authorized()
  @Mutation(() => JobType, {
    description:
      "Cancels one of the caller's jobs and returns it: images not yet started are canceled and refunded at once, a running image finishes " +
      '(kept if it succeeds, refunded if it fails), and the job ends `canceled` once nothing runs. Free; again on a canceled job it returns the job; ' +
      'a completed or failed job is CONFLICT (job_finished).',
  })
  async cancelJob(@Arg('id', () => ID, { description: JOB_ID }) id: string, @Ctx() ctx: GraphQLContext): Promise<JobView> {
    return ctx.services.jobs.cancel(ctx.principal, id, ctx.urls);
  }

  @Authorized()
  @Query(() => JobType, { description: "One of the caller's jobs; NOT_FOUND for an unknown id or another account's job." })
  async job(@Arg('id', () => ID, { description: JOB_ID }) id: string, @Ctx() ctx: GraphQLContext): Promise<JobView> {
    const job = await ctx.loaders.jobs.load(id);
    if (!job) throw new AppError('job_not_found');
    return job;
  }

  @Authorized()
  @Query(() => JobConnectionType, { description: "The caller's jobs, newest first." })
  async jobs(
    @Arg('first', () => Int, {
      nullable: true,
      defaultValue: DEFAULT_PAGE_SIZE,
      description: `How many jobs: 1 to ${MAX_PAGE_SIZE}; omitted or null: ${DEFAULT_PAGE_SIZE}.`,
    })
    first: number | null | undefined,
    @Arg('after', () => String, { nullable: true, description: "`pageInfo.endCursor` of the previous page; omitted or null: from the newest job." })
    after: string | null | undefined,
    @Ctx() ctx: GraphQLContext,
  ): Promise<{ nodes: JobView[]; pageInfo: PageInfoType }> {
    const page = await ctx.services.jobs.list(ctx.principal, { first: first ?? DEFAULT_PAGE_SIZE, after: after ?? null }, ctx.urls);
    // Prime the per-operation loader: a `job(id)` elsewhere in the same operation costs no read.
    for (const job of page.items) ctx.loaders.jobs.prime(job.jobId, job);
    return { nodes: page.items, pageInfo: { hasNextPage: page.nextCursor !== null, endCursor: page.nextCursor } };
  }

  @Authorized()
  @Subscription(() => JobType, {
    description: 'The job now, then on every change; completes after completed, failed or canceled. NOT_FOUND (job_not_found) as `job(id:)`.',
    subscribe: ({ args, context }) => {
      const ctx = context as GraphQLContext;
      return ctx.services.jobWatch.watch(ctx.principal, String(args.jobId), ctx.urls, ctx.signal);
    },
  })
  jobStatus(@Arg('jobId', () => ID, { description: JOB_ID }) _jobId: string, @Root() job: JobView): JobView {
    return job;
  }
}

@Resolver(() => JobType)
export class JobFieldsResolver {
  /** `id` is `jobId` under the name client caches normalise by. */
  @FieldResolver(() => ID)
  id(@Root() job: JobView): string {
    return job.jobId;
  }
}

@Resolver(() => GenerateResultType)
export class GenerateResultResolver {
  @FieldResolver(() => JobType)
  async job(@Root() created: JobCreated, @Ctx() ctx: GraphQLContext): Promise<JobView> {
    // The job is charged and visible by the time create (or its replay) returns: null here is a fault.
    const job = await ctx.loaders.jobs.load(created.jobId);
    if (!job) throw new Error(`created job ${created.jobId} is not visible to its caller`);
    return job;
  }
}

@Resolver()
export class DefinitionResolver {
  @Authorized()
  @Mutation(() => LookupResultType, { description: 'Looks a keyword up for one credit (a provider failure is BAD_GATEWAY or SERVICE_UNAVAILABLE and is not charged).' })
  async lookup(
    @Arg('keyword', () => String, { description: KEYWORD }) keyword: string,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey: string | null | undefined,
    @Ctx() ctx: GraphQLContext,
  ): Promise<LookupResultType> {
    return answerOf(await ctx.services.idempotency.run(ctx.principal, idempotencyKey, 'lookup', keyword, (attempt) => ctx.services.definitions.lookup(ctx.principal, keyword, attempt)));
  }
}

@Resolver(() => AccountType)
export class AccountResolver {
  @Authorized()
  @Query(() => AccountType, { description: "The caller's account." })
  me(@Ctx() ctx: GraphQLContext): AccountType {
    return { id: ctx.principal.accountId };
  }

  @FieldResolver(() => Int, { description: 'Current credit balance.' })
  async credits(@Root() account: AccountType, @Ctx() ctx: GraphQLContext): Promise<number> {
    const balance = await ctx.loaders.balances.load(account.id);
    // The key authenticated this very operation, so its account exists; anything else is a fault.
    if (balance === null) throw new Error(`no balance for authenticated account ${account.id}`);
    return balance;
  }

  @FieldResolver(() => ApiKeyType, {
    nullable: true,
    description: "The API key of this call (for a client token: the key that minted it); null for the console's own token.",
  })
  async key(@Ctx() ctx: GraphQLContext): Promise<ApiKeyType | null> {
    const keyId = ctx.principal.keyId;
    if (keyId === null || !ctx.services.apiKeys) return null;
    const key = await ctx.services.apiKeys.get(keyId);
    return { ...key, permissions: [...key.permissions] };
  }
}

export const resolvers = [JobResolver, JobFieldsResolver, GenerateResultResolver, DefinitionResolver, AccountResolver] as const;
