import { Field, GraphQLISODateTime, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { IMAGE_STATUSES, JOB_STATUSES, type ImageStatus, type JobStatus } from '../domain/jobs/types.js';

/**
 * GraphQL object types. Every decorator names its type explicitly: esbuild (tsx, vitest) emits no
 * decorator metadata. The fields mirror the REST bodies of the contract one for one; enum values are
 * the REST strings (`queued`, `succeeded`, …) so both doors speak the same words.
 */

const enumOf = <T extends string>(values: readonly T[]) =>
  Object.fromEntries(values.map((v) => [v, v])) as { [K in T]: K };

export const JobStatusEnum = enumOf<JobStatus>(JOB_STATUSES);
registerEnumType(JobStatusEnum, {
  name: 'JobStatus',
  description: 'queued → running → completed (at least one image succeeded) or failed (every image failed).',
});

export const ImageStatusEnum = enumOf<ImageStatus>(IMAGE_STATUSES);
registerEnumType(ImageStatusEnum, { name: 'ImageStatus' });

@ObjectType('JobImage', { description: 'One image of a job, in prompt order.' })
export class JobImageType {
  @Field(() => Int)
  index!: number;

  @Field(() => String)
  prompt!: string;

  @Field(() => ImageStatusEnum)
  status!: ImageStatus;

  @Field(() => String, { nullable: true, description: 'Signed, expiring URL (no Authorization needed); null until the image succeeded.' })
  url!: string | null;

  @Field(() => String, { nullable: true })
  error!: string | null;
}

@ObjectType('Job', { description: 'An image generation job: the same fields as GET /api/playground/images/{jobId}.' })
export class JobType {
  @Field(() => ID)
  jobId!: string;

  @Field(() => JobStatusEnum)
  status!: JobStatus;

  @Field(() => Int)
  totalImages!: number;

  @Field(() => Int)
  succeededImages!: number;

  @Field(() => Int)
  failedImages!: number;

  @Field(() => Int)
  creditsUsed!: number;

  @Field(() => Int)
  creditsRefunded!: number;

  @Field(() => GraphQLISODateTime)
  createdAt!: Date;

  @Field(() => GraphQLISODateTime)
  updatedAt!: Date;

  @Field(() => GraphQLISODateTime, { nullable: true, description: 'Null until the job reached completed or failed.' })
  completedAt!: Date | null;

  @Field(() => [JobImageType])
  images!: JobImageType[];
}

@ObjectType('GenerateResult', { description: 'A started job. creditsUsed = totalImages = number of prompts.' })
export class GenerateResultType {
  @Field(() => ID)
  jobId!: string;

  @Field(() => Int)
  totalImages!: number;

  @Field(() => Int)
  creditsUsed!: number;

  @Field(() => Int, { description: 'Balance after the deduction.' })
  credits!: number;
}

@ObjectType('LookupResult')
export class LookupResultType {
  @Field(() => String, { description: 'The requested keyword, trimmed.' })
  keyword!: string;

  @Field(() => String)
  definition!: string;

  @Field(() => Int, { description: 'Balance after the deduction.' })
  credits!: number;
}

/** The caller's account; `credits` is resolved through the per-operation balance loader. */
@ObjectType('Account')
export class AccountType {
  @Field(() => ID)
  id!: string;
}

@ObjectType('PageInfo')
export class PageInfoType {
  @Field(() => Boolean)
  hasNextPage!: boolean;

  @Field(() => String, { nullable: true, description: 'Pass as `after` to get the next page; null on the last page.' })
  endCursor!: string | null;
}

@ObjectType('JobConnection', { description: "A page of the caller's jobs, newest first." })
export class JobConnectionType {
  @Field(() => [JobType])
  nodes!: JobType[];

  @Field(() => PageInfoType)
  pageInfo!: PageInfoType;
}
