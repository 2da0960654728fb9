/**
 * The OpenTelemetry SDK, loaded only when OTEL_EXPORTER_OTLP_ENDPOINT is set (see preload.ts). It
 * reads the standard OTEL_* variables itself: OTLP/HTTP, `http/protobuf` unless
 * OTEL_EXPORTER_OTLP_PROTOCOL says `http/json`; W3C trace context, so an incoming `traceparent` is
 * continued. Instrumented: HTTP in and out, Fastify's routes, MongoDB commands, and pino's log lines
 * (which gain `trace_id` and `span_id`). GraphQL operations get one span each from the doors
 * (src/tracing/operations.ts), over HTTP and WebSocket alike: graphql-js' instrumentation would add a
 * second span per operation over WebSocket and none over HTTP, where graphql-jit executes.
 */
import { createRequire } from 'node:module';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { MongoDBInstrumentation } from '@opentelemetry/instrumentation-mongodb';
import { PinoInstrumentation } from '@opentelemetry/instrumentation-pino';

export function startTracing(serviceName: string | undefined): NodeSDK {
  const sdk = new NodeSDK({
    // Only when OTEL_SERVICE_NAME is unset: the option would win over the variable.
    ...(serviceName ? { serviceName } : {}),
    instrumentations: [
      new HttpInstrumentation({ ignoreIncomingRequestHook: (req) => req.url === '/healthz' || req.url === '/readyz' }),
      // Registers itself on every Fastify instance as it is created (diagnostics channel).
      new FastifyOtelInstrumentation({ registerOnInitialization: true }),
      new MongoDBInstrumentation(),
      new PinoInstrumentation(),
    ],
  });
  sdk.start();
  // The instrumentations patch CommonJS modules as they are required. Our ESM code imports node:http
  // and node:https (the webhook transport): required once here, their shared module objects are
  // patched before anything sends a request.
  const require = createRequire(import.meta.url);
  require('node:http');
  require('node:https');
  return sdk;
}
