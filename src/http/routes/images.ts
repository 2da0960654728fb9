import { z } from 'zod';
import type { ImageFiles } from '../../domain/jobs/files.js';
import type { Idempotency } from '../../domain/idempotency/service.js';
import { createJobRequestSchema, type PromptLimits } from '../../domain/jobs/validation.js';
import { priceText } from '../../domain/operations/catalog.js';
import type { ImageJobService } from '../../domain/ports.js';
import { imageBytes, imageOffer, jobCreated, jobView } from '../schemas/bodies.js';
import { API_KEY, EDGE, errorResponses, IDEMPOTENT, JSON_BODY } from '../schemas/errors.js';
import { idempotencyHeaders, idempotent, type BaseUrlOf, type RouteModule } from './types.js';

// Any text reaches the service: a malformed job id is the contract's 404, not a 400.
const jobIdParam = z.string().meta({ description: 'The job id returned at creation.' });
// Checked by the signature, whatever their shape: a tampered URL is a 403, not a 400.
const signed = (description: string) => z.unknown().meta({ type: 'string', description });

/**
 * Image service (SERVICES=images): start a job, poll it, cancel it, and fetch its images by signed URL.
 * POST answers 201 Created with a Location header naming the job's status URL.
 */
const imageRoutes: RouteModule<{ jobs: ImageJobService; imageFiles: ImageFiles; idempotency: Idempotency; baseUrlOf: BaseUrlOf; limits: PromptLimits }> = async (
  app,
  { jobs, imageFiles, idempotency, baseUrlOf, limits },
) => {
  const offer = jobs.imageOptions();
  const options = {
    summary: 'What this deployment offers: sizes, formats, and whether it takes a seed and a negative prompt (free)',
    response: { 200: imageOffer, ...errorResponses([...EDGE, ...API_KEY]) },
  };
  app.get('/api/playground/images/options', { config: { auth: 'apiKey', operation: 'imageOptions' }, schema: options }, async (_request, reply) => reply.send(offer));

  const create = {
    summary: `Start an image job (${priceText('generate')}, whatever the options)`,
    body: createJobRequestSchema(limits, offer),
    headers: idempotencyHeaders,
    response: {
      201: jobCreated.meta({ description: 'Accepted and charged; `Location` names the job.' }),
      ...errorResponses([...EDGE, ...API_KEY, ...JSON_BODY, ...IDEMPOTENT, 'invalid_request', 'insufficient_credits']),
    },
  };
  app.post('/api/playground/images', { config: { auth: 'apiKey', operation: 'generate' }, schema: create }, async (request, reply) => {
    // The prompts as sent (the service trims them): an Idempotency-Key's fingerprint is of the request
    // (the prompts alone when no option is sent, as before options existed).
    const { prompts, size, format, seed, negativePrompt } = request.body;
    const given = { size, format, seed, negativePrompt };
    const sent = Object.values(given).some((v) => v !== undefined);
    const created = await idempotent(idempotency, request, reply, 'generate', sent ? { prompts, ...given } : prompts, (attempt) =>
      jobs.create(request.principal!, prompts, attempt, given),
    );
    return reply.code(201).header('location', `/api/playground/images/${created.jobId}`).send(created);
  });

  const poll = {
    summary: 'Read a job and its images',
    params: z.object({ jobId: jobIdParam }),
    response: { 200: jobView, ...errorResponses([...EDGE, ...API_KEY, 'job_not_found']) },
  };
  app.get('/api/playground/images/:jobId', { config: { auth: 'apiKey', operation: 'job' }, schema: poll }, async (request, reply) => {
    const job = await jobs.get(request.principal!, request.params.jobId, { baseUrl: baseUrlOf(request) });
    // Progress changes between polls: never serve a cached copy.
    return reply.header('cache-control', 'no-store').send(job);
  });

  // Free and idempotent (a canceled job is answered again), so no Idempotency-Key is needed.
  const cancel = {
    summary: 'Cancel a job: images not started are refunded at once; a running one finishes (free, idempotent)',
    params: z.object({ jobId: jobIdParam }),
    response: {
      200: jobView.meta({ description: 'The job as it is now (`canceled` once nothing runs); a canceled job answers again.' }),
      ...errorResponses([...EDGE, ...API_KEY, 'job_not_found', 'job_finished']),
    },
  };
  app.post('/api/playground/images/:jobId/cancel', { config: { auth: 'apiKey', operation: 'cancelJob' }, schema: cancel }, async (request, reply) => {
    const job = await jobs.cancel(request.principal!, request.params.jobId, { baseUrl: baseUrlOf(request) });
    return reply.header('cache-control', 'no-store').send(job);
  });

  // No API key: the signature in the URL is the authority (see ImageFiles).
  const file = {
    summary: "Fetch an image by its signed URL (a job's `images[].url`; no Authorization)",
    params: z.object({ jobId: jobIdParam, index: z.string().meta({ description: "The image's index in the job." }) }),
    querystring: z.looseObject({ expires: signed('Expiry (Unix seconds), part of the signed URL.'), sig: signed('Signature, part of the signed URL.') }),
    response: {
      200: { description: 'The image bytes, with ETag and Cache-Control until the URL expires.', content: { 'image/*': { schema: imageBytes } } },
      304: z.undefined().meta({ description: 'Not modified (If-None-Match).' }),
      ...errorResponses([...EDGE, 'invalid_signature', 'image_not_found', 'image_expired', 'image_store_unavailable']),
    },
  };
  app.get('/api/playground/images/:jobId/images/:index', { schema: file }, async (request, reply) => {
    const { jobId, index } = request.params;
    const { expires, sig } = request.query;
    const info = await imageFiles.stat(jobId, index, expires, sig);
    // The bytes behind a URL never change and the URL dies at `expires`: cache until then.
    const maxAge = Math.max(0, Number(expires) - Math.floor(Date.now() / 1000));
    reply.header('etag', info.etag).header('cache-control', `private, max-age=${maxAge}, immutable`).header('x-content-type-options', 'nosniff');
    if (request.headers['if-none-match']?.split(/\s*,\s*/).includes(info.etag)) return reply.code(304).send();
    const image = await imageFiles.read(info);
    return reply.type(image.contentType).header('content-length', String(image.data.length)).send(image.data);
  });
};

export default imageRoutes;
