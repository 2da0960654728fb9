/**
 * One span per GraphQL operation (OpenTelemetry's GraphQL semantic conventions): named
 * `<type> <operationName>` (`query`, `mutation`, `subscription` alone when anonymous; `GraphQL
 * Operation` until the document is known to hold one), with `graphql.operation.type` and
 * `graphql.operation.name`. Over HTTP it is a child of the request's span; over WebSocket, of the
 * `traceparent` a subscribe message carries in its `extensions`, or a trace of its own. Only the
 * OpenTelemetry API: the doors use it only when tracing is configured.
 */
import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from '@opentelemetry/api';
import type { OperationDefinitionNode } from 'graphql';

const tracer = trace.getTracer('credit-gateway-graphql');
/** A span name is a label, never a document: an operation name longer than this is cut. */
export const MAX_SPAN_NAME = 100;
const UNKNOWN_OPERATION = 'GraphQL Operation';

/** Starts an operation's span under the active context, or under `traceparent` when one is given. */
export function startOperationSpan(traceparent?: unknown): Span {
  const parent = typeof traceparent === 'string' ? propagation.extract(context.active(), { traceparent }) : context.active();
  return tracer.startSpan(UNKNOWN_OPERATION, { kind: SpanKind.SERVER }, parent);
}

/** Names the span after the operation the document resolved to. */
export function nameOperationSpan(span: Span, operation: OperationDefinitionNode | null | undefined): void {
  if (!operation) return;
  const type = operation.operation;
  const name = operation.name?.value;
  span.updateName((name ? `${type} ${name}` : type).slice(0, MAX_SPAN_NAME));
  span.setAttribute('graphql.operation.type', type);
  if (name) span.setAttribute('graphql.operation.name', name);
}

/** Ends the span; errors (GraphQL errors of the answer, or a refusal) mark it failed. */
export function endOperationSpan(span: Span, errors?: readonly { message: string }[] | null): void {
  if (errors?.length) span.setStatus({ code: SpanStatusCode.ERROR, message: errors[0]!.message.slice(0, 200) });
  span.end();
}

/** Runs `work` with the operation's span active, so the spans of its resolvers (MongoDB, HTTP out) are its children. */
export function inOperationSpan<T>(span: Span, work: () => T): T {
  return context.with(trace.setSpan(context.active(), span), work);
}
