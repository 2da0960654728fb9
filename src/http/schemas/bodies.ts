/**
 * Success bodies of the REST routes, for the OpenAPI document (the views they describe are the
 * domain's: JobView, JobCreated, DefinitionResult, MintedToken). Responses are not checked against them
 * at run time (see src/http/openapi/compilers.ts); test/http/openapi.test.ts checks real answers.
 */
import { z } from 'zod';
import { CLIENT_SCOPES } from '../../domain/client-tokens/scopes.js';
import { IMAGE_FORMATS } from '../../domain/jobs/options.js';
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
  options: z
    .object({
      size: z.string().meta({ description: 'WIDTHxHEIGHT.' }),
      format: z.enum(IMAGE_FORMATS),
      seed: z.int().nullable().meta({ description: 'The seed of image 0 (image i uses seed + i); null without one.' }),
      negativePrompt: z.string().nullable(),
    })
    .meta({ description: 'The options the job was started with, the defaults filled in.' }),
  images: z
    .array(
      z.object({
        index: count,
        prompt: z.string(),
        status: z.enum(IMAGE_STATUSES),
        url: z.url().nullable().meta({ description: 'Signed, expiring URL of the image (fetch it without Authorization); null until it succeeded, and once it expired.' }),
        error: z.string().nullable(),
        width: count,
        height: count,
        contentType: z.string().meta({ description: '`image/png`, `image/webp` or `image/jpeg`: what the URL serves.' }),
        seed: z.int().nullable().meta({ description: "The image's seed (the job's seed + index); null without one." }),
        expired: z.boolean().meta({ description: 'Older than the retention (IMAGE_RETENTION): its bytes are deleted and `url` is null.' }),
      }),
    )
    .meta({ description: 'One entry per prompt, in prompt order.' }),
});

export const imageOffer = z.object({
  sizes: z.array(z.string()).meta({ description: 'The sizes `size` may name (WIDTHxHEIGHT).' }),
  defaultSize: z.string(),
  formats: z.array(z.enum(IMAGE_FORMATS)),
  seed: z.boolean().meta({ description: 'Whether `seed` is taken.' }),
  negativePrompt: z.boolean().meta({ description: 'Whether `negativePrompt` is taken.' }),
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
