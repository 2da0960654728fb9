import type { FastifyRequest } from 'fastify';
import { isAppError } from '../../domain/errors.js';
import { utcDay } from '../../domain/usage/types.js';
import { callerOf, pageContext } from '../context.js';
import { toCsv } from '../csv.js';
import { day } from '../html.js';
import { sendHtml } from '../render.js';
import { usagePage } from '../views/usage.js';
import { SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

type UsageQuery = { Querystring: { from?: string; to?: string } };

/** Usage per day, service and key (by default the last 30 days), as a page and as CSV. */
const usageRoutes: ConsoleRoute<Pick<ConsoleServices, 'usage' | 'keys'>> = async (app, s) => {
  const usageOf = async (request: FastifyRequest<UsageQuery>) => {
    const caller = callerOf(request);
    const to = request.query.to ? request.query.to : day(utcDay(new Date()));
    const from = request.query.from ? request.query.from : day(utcDay(new Date(`${to}T00:00:00Z`), -29));
    const rows = await s.usage.forAccount(caller.principal.accountId, { from, to });
    const keys = new Map((await s.keys.list(caller.principal.accountId)).map((k) => [k.id, k]));
    const sourceName = (source: string) => {
      if (source === 'console') return 'Console playground';
      const key = keys.get(source);
      return key ? `${key.name} (${key.prefix}…)${key.deletedAt ? ' (deleted)' : ''}` : source;
    };
    return { rows, sourceName, from: new Date(`${from}T00:00:00Z`), to: new Date(`${to}T00:00:00Z`) };
  };

  app.get<UsageQuery>('/usage', SESSION, async (request, reply) => {
    try {
      return sendHtml(reply, usagePage(pageContext(request), await usageOf(request)));
    } catch (err) {
      if (!isAppError(err) || err.code !== 'invalid_request') throw err;
      const to = utcDay(new Date());
      return sendHtml(reply.code(400), usagePage(pageContext(request), { rows: [], from: utcDay(to, -29), to, sourceName: (x) => x, error: err.message }));
    }
  });

  app.get<UsageQuery>('/usage.csv', SESSION, async (request, reply) => {
    const { rows, sourceName, from, to } = await usageOf(request);
    const csv = toCsv(
      ['day', 'service', 'source', 'key', 'calls', 'credits', 'refunded'],
      rows.map((r) => [day(r.day), r.service, r.source, sourceName(r.source), r.calls, r.credits, r.refunded]),
    );
    return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="usage-${day(from)}-${day(to)}.csv"`).send(csv);
  });
};

export default usageRoutes;
