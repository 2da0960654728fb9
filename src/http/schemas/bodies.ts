/**
 * Success bodies of the REST routes, for the OpenAPI document (the views they describe are the
 * domain's: JobView, JobCreated, DefinitionResult, MintedToken). Responses are not checked against them
 * at run time (see src/http/openapi/compilers.ts); test/http/openapi.test.ts checks real answers.
 */
import { z } from 'zod';
import { CLIENT_SCOPES } from '../../domain/client-tokens/scopes.js';
import { IMAGE_STATUSES, JOB_STATUSES } from '../../domain/jobs/types.js';
import { WEBHOOK_EVENT_TYPES } from '../../domain/webhooks/types.js';
import { withSerializer } from '../openapi/compilers.js';
import { serializeDefinitionResult } from './definition-json.js';

const count = z.int().min(0);
const credits = z.int().meta({ description: 'The account balance after this request.' });
const jobId = z.uuid().meta({ description: 'The job id (UUID v4).' });
// Dates go out as ISO 8601 strings (JSON.stringify); the document says `string`, `date-time`.
const time = z.date();

export const definitionResult = withSerializer(
  z.object({
    keyword: z.string().meta({ description: 'The keyword as sent, trimmed.' }),
    definition: z.string().meta({ description: "The definition; a word the provider does not know gets a text saying so (and is charged)." }),
    credits,
  }),
  serializeDefinitionResult,
);

export const jobCreated = z.object({ jobId, totalImages: count, creditsUsed: count.meta({ description: 'One per prompt.' }), credits });

export const jobView = z.object({
  jobId,
  status: z.enum(JOB_STATUSES),
  totalImages: count,
  succeededImages: count,
  failedImages: count,
  creditsUsed: count,
  creditsRefunded: count.meta({ description: 'Credits given back for failed images.' }),
  createdAt: time,
  updatedAt: time,
  completedAt: time.nullable().meta({ description: 'Null until the job is final.' }),
  images: z
    .array(
      z.object({
        index: count,
        prompt: z.string(),
        status: z.enum(IMAGE_STATUSES),
        url: z.url().nullable().meta({ description: 'Signed, expiring URL of the image (fetch it without Authorization); null until it succeeded.' }),
        error: z.string().nullable(),
      }),
    )
    .meta({ description: 'One entry per prompt, in prompt order.' }),
});

export const mintedToken = z.object({
  token: z.string().regex(/^wi_tok_/).meta({ description: 'The client token, shown once.' }),
  expiresAt: time,
  origins: z.array(z.string()),
  scopes: z.array(z.enum(CLIENT_SCOPES)),
  maxCredits: z.int().min(1).nullable(),
  trustedDocumentsOnly: z.boolean(),
});

export const imageBytes = z.custom<Buffer>().meta({ description: 'The image bytes.' });

const webhookEvents = z.array(z.enum(WEBHOOK_EVENT_TYPES));
const webhookBase = { id: z.string(), url: z.url(), events: webhookEvents, createdAt: time };

export const webhookCreated = z.object({ ...webhookBase, secret: z.string().regex(/^whsec_/).meta({ description: 'The signing secret (Standard Webhooks), shown once.' }) });

export const webhookList = z.object({
  webhooks: z.array(z.object({ ...webhookBase, disabledAt: time.nullable().meta({ description: 'Set when the endpoint answered 410 Gone: nothing more is sent to it.' }) })),
});
