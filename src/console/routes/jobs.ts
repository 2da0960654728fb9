import type { BaseUrlOf } from '../../http/routes/types.js';
import { callerOf, pageContext } from '../context.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { jobsPage } from '../views/jobs.js';
import { SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

/** The account's image jobs, newest first, 20 a page (`after` is the next page's cursor). */
const jobRoutes: ConsoleRoute<Pick<ConsoleServices, 'jobs'> & { baseUrlOf: BaseUrlOf }> = async (app, { jobs, baseUrlOf }) => {
  app.get('/jobs', SESSION, async (request, reply) => {
    const page = await jobs.list(callerOf(request).principal, { first: 20, after: queryParam(request, 'after') ?? null }, { baseUrl: baseUrlOf(request) });
    return sendHtml(reply, jobsPage(pageContext(request), { jobs: page.items, next: page.nextCursor }));
  });
};

export default jobRoutes;
