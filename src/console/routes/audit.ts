import { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import type { AuditSearch } from '../../domain/audit/service.js';
import { isAppError } from '../../domain/errors.js';
import { callerOf, pageContext, wantsJson } from '../context.js';
import { csvRow } from '../csv.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { auditPage, describe, EVENT_LABELS } from '../views/audit.js';
import { SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

const AUDIT_PAGE_ROWS = 200;

/** The filter as the query gives it: each parameter once; the audit log judges the values. */
function searchOf(request: FastifyRequest): AuditSearch {
  return { event: queryParam(request, 'event'), from: queryParam(request, 'from'), to: queryParam(request, 'to') };
}

/** The audit log: the newest entries of a filter as a page; the whole filtered range as JSONL or CSV. */
const auditRoutes: ConsoleRoute<Pick<ConsoleServices, 'audit'>> = async (app, { audit }) => {
  app.get('/audit', SESSION, async (request, reply) => {
    const caller = callerOf(request);
    try {
      const search = searchOf(request);
      const filter = audit.parseSearch(search);
      const entries = await collect(audit.search(caller.principal.accountId, search, AUDIT_PAGE_ROWS));
      return sendHtml(reply, auditPage(pageContext(request), { entries, filter: { event: filter.events[0] ?? '', ...filter }, limit: AUDIT_PAGE_ROWS }));
    } catch (err) {
      if (!isAppError(err) || err.code !== 'invalid_request' || wantsJson(request)) throw err;
      const filter = audit.parseSearch({});
      return sendHtml(reply.code(400), auditPage(pageContext(request), { entries: [], filter: { event: '', ...filter }, limit: AUDIT_PAGE_ROWS, error: err.message }));
    }
  });

  // Exports stream the whole filtered range (90 days at most are kept), one entry at a time.
  app.get('/audit.jsonl', SESSION, async (request, reply) => {
    const entries = audit.search(callerOf(request).principal.accountId, searchOf(request));
    async function* lines() {
      for await (const e of entries) yield `${JSON.stringify(e)}\n`;
    }
    return reply.type('application/x-ndjson; charset=utf-8').header('content-disposition', 'attachment; filename="audit.jsonl"').send(Readable.from(lines()));
  });

  app.get('/audit.csv', SESSION, async (request, reply) => {
    const entries = audit.search(callerOf(request).principal.accountId, searchOf(request));
    async function* lines() {
      yield csvRow(['time', 'event', 'event_label', 'actor', 'ip', 'details', 'key_id']);
      for await (const e of entries) yield csvRow([e.createdAt, e.event, EVENT_LABELS[e.event] ?? e.event, e.actor, e.ip ?? '', describe(e), e.keyId ?? '']);
    }
    return reply.type('text/csv; charset=utf-8').header('content-disposition', 'attachment; filename="audit.csv"').send(Readable.from(lines()));
  });
};

export default auditRoutes;

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}
