import type { ImageFiles } from '../../domain/jobs/files.js';
import type { Idempotency } from '../../domain/idempotency/service.js';
import type { ImageJobService } from '../../domain/ports.js';
import { idempotent, type BaseUrlOf, type RouteModule } from './types.js';

/**
 * Image service (SERVICES=images): start a job, poll it, cancel it, and fetch its images by signed URL.
 * POST answers 201 Created with a Location header naming the job's status URL.
 */
const imageRoutes: RouteModule<{ jobs: ImageJobService; imageFiles: ImageFiles; idempotency: Idempotency; baseUrlOf: BaseUrlOf }> = async (
  app,
  { jobs, imageFiles, idempotency, baseUrlOf },
) => {
  app.post('/api/playground/images', { config: { auth: 'apiKey' } }, async (request, reply) => {
    const body = request.body as { prompts?: unknown } | undefined;
    const prompts = body !== null && typeof body === 'object' && !Array.isArray(body) ? body.prompts : undefined;
    const created = await idempotent(idempotency, request, reply, 'generate', prompts, (attempt) => jobs.create(request.principal!, prompts, attempt));
    return reply.code(201).header('location', `/api/playground/images/${created.jobId}`).send(created);
  });

  app.get<{ Params: { jobId: string } }>('/api/playground/images/:jobId', { config: { auth: 'apiKey' } }, async (request, reply) => {
    const job = await jobs.get(request.principal!, request.params.jobId, { baseUrl: baseUrlOf(request) });
    // Progress changes between polls: never serve a cached copy.
    return reply.header('cache-control', 'no-store').send(job);
  });

  // Free and idempotent (a canceled job is answered again), so no Idempotency-Key is needed.
  app.post<{ Params: { jobId: string } }>('/api/playground/images/:jobId/cancel', { config: { auth: 'apiKey' } }, async (request, reply) => {
    const job = await jobs.cancel(request.principal!, request.params.jobId, { baseUrl: baseUrlOf(request) });
    return reply.header('cache-control', 'no-store').send(job);
  });

  // No API key: the signature in the URL is the authority (see ImageFiles).
  app.get<{ Params: { jobId: string; index: string }; Querystring: { expires?: string; sig?: string } }>(
    '/api/playground/images/:jobId/images/:index',
    async (request, reply) => {
      const { jobId, index } = request.params;
      const { expires, sig } = request.query;
      const info = await imageFiles.stat(jobId, index, expires, sig);
      // The bytes behind a URL never change and the URL dies at `expires`: cache until then.
      const maxAge = Math.max(0, Number(expires) - Math.floor(Date.now() / 1000));
      reply
        .header('etag', info.etag)
        .header('cache-control', `private, max-age=${maxAge}, immutable`)
        .header('x-content-type-options', 'nosniff');
      if (request.headers['if-none-match']?.split(/\s*,\s*/).includes(info.etag)) return reply.code(304).send();
      const file = await imageFiles.read(info);
      return reply.type(file.contentType).header('content-length', String(file.length)).send(file.data);
    },
  );
};

export default imageRoutes;
