import type { FastifyRequest } from 'fastify';
import { parseDay } from '../../domain/audit/service.js';
import { isAppError } from '../../domain/errors.js';
import { utcDay } from '../../domain/usage/types.js';
import { callerOf, pageContext, wantsJson } from '../context.js';
import { toCsv } from '../csv.js';
import { day } from '../html.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { usagePage } from '../views/usage.js';
import { SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

/** Usage per day, service and key (by default the last 30 days), as a page and as CSV. */
const usageRoutes: ConsoleRoute<Pick<ConsoleServices, 'usage' | 'keys'>> = async (app, s) => {
  const usageOf = async (request: FastifyRequest) => {
    const caller = callerOf(request);
    const to = dayParam(request, 'to') ?? utcDay(new Date());
    const from = dayParam(request, 'from') ?? utcDay(to, -29);
    const rows = await s.usage.forAccount(caller.principal.accountId, { from, to });
    const keys = new Map((await s.keys.list(caller.principal.accountId)).map((k) => [k.id, k]));
    const sourceName = (source: string) => {
      if (source === 'console') return 'Console playground';
      const key = keys.get(source);
      return key ? `${key.name} (${key.prefix}…)${key.deletedAt ? ' (deleted)' : ''}` : source;
    };
    return { rows, sourceName, from, to };
  };

  app.get('/usage', SESSION, async (request, reply) => {
    try {
      return sendHtml(reply, usagePage(pageContext(request), await usageOf(request)));
    } catch (err) {
      if (!isAppError(err) || err.code !== 'invalid_request' || wantsJson(request)) throw err;
      const to = utcDay(new Date());
      return sendHtml(reply.code(400), usagePage(pageContext(request), { rows: [], from: utcDay(to, -29), to, sourceName: (x) => x, error: err.message }));
    }
  });

  app.get('/usage.csv', SESSION, async (request, reply) => {
    const { rows, sourceName, from, to } = await usageOf(request);
    const csv = toCsv(
      ['day', 'service', 'source', 'key', 'calls', 'credits', 'refunded'],
      rows.map((r) => [day(r.day), r.service, r.source, sourceName(r.source), r.calls, r.credits, r.refunded]),
    );
    return reply.type('text/csv; charset=utf-8').header('content-disposition', `attachment; filename="usage-${day(from)}-${day(to)}.csv"`).send(csv);
  });
};

export default usageRoutes;

/** A `YYYY-MM-DD` parameter as its UTC midnight (a 400 naming it when it is not a date), or undefined. */
function dayParam(request: FastifyRequest, name: 'from' | 'to'): Date | undefined {
  const value = queryParam(request, name);
  return value === undefined ? undefined : parseDay(name, value);
}
