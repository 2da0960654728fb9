import type { FastifyReply, FastifyRequest } from 'fastify';
import { translate } from '../../edge/errors.js';
import type { BaseUrlOf } from '../../http/routes/types.js';
import { balanceOf, callerOf, pageContext, wantsJson } from '../context.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { playgroundPage, type PlaygroundState } from '../views/playground.js';
import { needs, type ConsoleRoute, type ConsoleServices } from './types.js';

type Deps = Pick<ConsoleServices, 'definitions' | 'jobs' | 'jobWatch' | 'credits'> & { baseUrlOf: BaseUrlOf; csp: string };

/**
 * The playground: a lookup and a batch of prompts, charged for real as the signed-in account, and a
 * job's live progress as server-sent events. A refusal a person can fix is shown on the page.
 */
const playgroundRoutes: ConsoleRoute<Deps> = async (app, s) => {
  const offer = s.jobs.imageOptions();
  const render = async (request: FastifyRequest, reply: FastifyReply, state: Omit<PlaygroundState, 'credits' | 'offer'>) =>
    sendHtml(reply, playgroundPage(pageContext(request, '/console/playground'), { credits: await balanceOf(s.credits, request), offer, ...state }));

  app.get('/playground', needs('playground.use'), async (request, reply) => {
    const id = queryParam(request, 'job');
    const job = id ? await s.jobs.get(callerOf(request).principal, id, { baseUrl: s.baseUrlOf(request) }) : undefined;
    return render(request, reply, { job });
  });

  app.post<{ Body: { keyword?: unknown } }>('/playground/lookup', needs('playground.use'), async (request, reply) => {
    const keyword = request.body?.keyword;
    try {
      const definition = await s.definitions.lookup(callerOf(request).principal, keyword);
      if (wantsJson(request)) return reply.send(definition);
      return render(request, reply, { keyword: String(keyword), definition });
    } catch (err) {
      const e = translate(err, request);
      if (wantsJson(request) || e.httpStatus >= 500) throw e;
      return render(request, reply.code(e.httpStatus), { keyword: typeof keyword === 'string' ? keyword : '', lookupError: e.message });
    }
  });

  app.post<{ Body: { prompts?: unknown; size?: unknown; format?: unknown; seed?: unknown } }>('/playground/generate', needs('playground.use'), async (request, reply) => {
    const text = typeof request.body?.prompts === 'string' ? request.body.prompts : '';
    // One prompt per line; blank lines are spacing, not prompts.
    const prompts = text.split(/\r?\n/).map((p) => p.trim()).filter(Boolean);
    const form = { size: formText(request.body?.size), format: formText(request.body?.format), seed: formText(request.body?.seed) };
    // A form sends text: a seed of digits is the number; anything else reaches the rule as it is.
    const options = { size: form.size, format: form.format, seed: form.seed !== undefined && /^\d{1,10}$/.test(form.seed) ? Number(form.seed) : form.seed };
    const chosen = { size: form.size, format: form.format, seed: form.seed };
    try {
      const created = await s.jobs.create(callerOf(request).principal, prompts, null, options);
      if (wantsJson(request)) return reply.code(201).send(created);
      const job = await s.jobs.get(callerOf(request).principal, created.jobId, { baseUrl: s.baseUrlOf(request) });
      return render(request, reply.code(201), { prompts: text, chosen, created, job });
    } catch (err) {
      const e = translate(err, request);
      if (wantsJson(request) || e.httpStatus >= 500) throw e;
      const message = e.message.replace(/^(prompts|size|format|seed)/, (field) => field[0]!.toUpperCase() + field.slice(1));
      return render(request, reply.code(e.httpStatus), { prompts: text, chosen, generateError: message });
    }
  });

  /** Open live streams, ended when the app closes so shutdown never waits on a browser. */
  const streams = new Set<() => void>();
  app.addHook('preClose', async function endPlaygroundStreams() {
    for (const end of streams) end();
  });

  // Live progress of one job as server-sent events: each state change, then `balance` at the end.
  app.get<{ Params: { id: string } }>('/playground/jobs/:id/events', needs('playground.use'), async (request, reply) => {
    const abort = new AbortController();
    const stream = await s.jobWatch.watch(callerOf(request).principal, request.params.id, { baseUrl: s.baseUrlOf(request) }, abort.signal);
    // The response is written by hand from here on, so it carries the scope's headers itself.
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      'content-security-policy': s.csp,
      'x-content-type-options': 'nosniff',
      'x-request-id': String(request.id),
    });
    const end = () => {
      void stream.return?.();
      raw.end();
    };
    streams.add(end);
    raw.on('close', () => {
      streams.delete(end);
      void stream.return?.();
    });
    try {
      for await (const view of stream) raw.write(`event: job\ndata: ${JSON.stringify(view)}\n\n`);
      raw.write(`event: balance\ndata: ${JSON.stringify({ credits: await balanceOf(s.credits, request) })}\n\n`);
    } catch (err) {
      request.log.warn({ err, requestId: request.id }, 'console: job stream ended by an error');
    } finally {
      streams.delete(end);
      raw.end();
    }
  });
};

/** A form field's text; empty or absent: not given. */
function formText(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

export default playgroundRoutes;
