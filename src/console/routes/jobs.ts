import type { FastifyReply, FastifyRequest } from 'fastify';
import { isAppError } from '../../domain/errors.js';
import type { BaseUrlOf } from '../../http/routes/types.js';
import { callerOf, pageContext, wantsJson } from '../context.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { jobsPage, type JobsNotice } from '../views/jobs.js';
import { needs, SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

/**
 * The account's image jobs, newest first, 20 a page (`after` is the next page's cursor), each
 * unfinished one with a Cancel button that calls the same cancel as REST and GraphQL.
 */
const jobRoutes: ConsoleRoute<Pick<ConsoleServices, 'jobs'> & { baseUrlOf: BaseUrlOf }> = async (app, { jobs, baseUrlOf }) => {
  const render = async (request: FastifyRequest, reply: FastifyReply, after: string | null, notice?: JobsNotice) => {
    const page = await jobs.list(callerOf(request).principal, { first: 20, after }, { baseUrl: baseUrlOf(request) });
    return sendHtml(reply, jobsPage(pageContext(request, '/console/jobs'), { jobs: page.items, next: page.nextCursor, notice }));
  };

  app.get('/jobs', SESSION, async (request, reply) => render(request, reply, queryParam(request, 'after') ?? null));

  app.post<{ Params: { id: string } }>('/jobs/:id/cancel', needs('jobs.cancel'), async (request, reply) => {
    try {
      const job = await jobs.cancel(callerOf(request).principal, request.params.id, { baseUrl: baseUrlOf(request) });
      if (wantsJson(request)) return reply.send(job);
      return render(request, reply, null, { job });
    } catch (err) {
      // A job that finished meanwhile is news for the person, shown on the page; anything else is an error page.
      if (!isAppError(err) || err.code !== 'job_finished' || wantsJson(request)) throw err;
      return render(request, reply.code(409), null, { error: err.message });
    }
  });
};

export default jobRoutes;
