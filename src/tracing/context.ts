/**
 * Trace context where the code carries it across processes by hand: a queued image or webhook
 * delivery records the `traceparent` it was queued under, and the worker continues that trace. Only
 * the OpenTelemetry API (no SDK): with tracing off every call here is a no-op that makes nothing.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';

const tracer = trace.getTracer('credit-gateway');

/** The W3C `traceparent` of the active span, if tracing is on and a span is active. */
export function currentTraceparent(): string | undefined {
  const carrier: { traceparent?: string } = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/**
 * Runs `work` in a span named `name`, a child of the span `traceparent` names (queued work: its parent
 * is in another process), or a new trace without one. Errors mark the span and are rethrown.
 */
export function inSpan<T>(name: string, traceparent: string | undefined, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  const parent = traceparent ? propagation.extract(context.active(), { traceparent }) : context.active();
  return tracer.startActiveSpan(name, { kind: SpanKind.CONSUMER, attributes }, parent, async (span) => {
    try {
      return await work();
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Sends the spans still buffered (before the process exits), waiting at most `timeoutMs`; nothing to do with tracing off. */
export async function flushTraces(timeoutMs = 2_000): Promise<void> {
  const provider = trace.getTracerProvider() as { getDelegate?: () => { forceFlush?: () => Promise<void> } };
  const flushing = provider.getDelegate?.().forceFlush?.();
  if (!flushing) return;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
  await Promise.race([flushing.catch(() => undefined), late]).finally(() => clearTimeout(timer));
}
