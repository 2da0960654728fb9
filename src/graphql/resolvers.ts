import { Arg, Ctx, FieldResolver, ID, Int, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import { AppError } from '../domain/errors.js';
import type { JobView } from '../domain/jobs/types.js';
import type { GraphQLContext } from './context.js';
import { watchJob } from '../queue/job-watch.js';
import { AccountType, GenerateResultType, JobConnectionType, JobType, LookupResultType } from './types.js';

/**
 * Thin resolvers: parse arguments, call the domain service REST calls too, shape the result. Every
 * rule (validation texts, charges, visibility of jobs) lives in the services; GraphQL's type system
 * only adds what it enforces by itself (e.g. a non-string prompt never reaches a resolver).
 */

const IDEMPOTENCY_KEY =
  'Retry-safe key (1-255 printable ASCII): the first result for it is replayed for 24 h; the same key with other arguments is refused.';

@Resolver()
export class JobResolver {
  @Mutation(() => GenerateResultType, { description: 'Starts an image job: one image and one credit per prompt.' })
  async generate(
    @Arg('prompts', () => [String]) prompts: string[],
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey: string | null | undefined,
    @Ctx() ctx: GraphQLContext,
  ): Promise<GenerateResultType> {
    const run = () => ctx.services.jobs.create(ctx.principal, prompts);
    return (await ctx.services.idempotency.run(ctx.principal, idempotencyKey, 'generate', prompts, run)).value;
  }

  @Query(() => JobType, { description: "One of the caller's jobs; NOT_FOUND for an unknown id or another account's job." })
  async job(@Arg('id', () => ID) id: string, @Ctx() ctx: GraphQLContext): Promise<JobView> {
    const job = await ctx.loaders.jobs.load(id);
    if (!job) throw new AppError('job_not_found');
    return job;
  }

  @Query(() => JobConnectionType, { description: "The caller's jobs, newest first." })
  async jobs(
    @Arg('first', () => Int, { defaultValue: 20 }) first: number,
    @Arg('after', () => String, { nullable: true }) after: string | null | undefined,
    @Ctx() ctx: GraphQLContext,
  ): Promise<JobConnectionType> {
    const page = await ctx.services.jobs.list(ctx.principal, { first, after: after ?? null }, ctx.urls);
    // Prime the per-operation loader: a `job(id)` elsewhere in the same operation costs no read.
    for (const job of page.items) ctx.loaders.jobs.prime(job.jobId, job);
    return { nodes: page.items, pageInfo: { hasNextPage: page.nextCursor !== null, endCursor: page.nextCursor } };
  }

  @Subscription(() => JobType, {
    description: 'The job now, then on every change; completes after completed or failed.',
    subscribe: ({ args, context }) => watchJob(context as GraphQLContext, String(args.jobId)),
  })
  jobStatus(@Arg('jobId', () => ID) _jobId: string, @Root() job: JobView): JobView {
    return job;
  }
}

@Resolver()
export class DefinitionResolver {
  @Mutation(() => LookupResultType, { description: 'Looks a keyword up for one credit.' })
  async lookup(
    @Arg('keyword', () => String) keyword: string,
    @Arg('idempotencyKey', () => String, { nullable: true, description: IDEMPOTENCY_KEY }) idempotencyKey: string | null | undefined,
    @Ctx() ctx: GraphQLContext,
  ): Promise<LookupResultType> {
    const run = () => ctx.services.definitions.lookup(ctx.principal, keyword);
    return (await ctx.services.idempotency.run(ctx.principal, idempotencyKey, 'lookup', keyword, run)).value;
  }
}

@Resolver(() => AccountType)
export class AccountResolver {
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
}

export const resolvers = [JobResolver, DefinitionResolver, AccountResolver] as const;
