/**
 * Preloaded with `node --import` before the process's entry (`npm start`, `npm run worker`, the
 * compiled build): the instrumentations must patch modules before anything loads them. With
 * OTEL_EXPORTER_OTLP_ENDPOINT unset it loads nothing more, and tracing costs nothing.
 */
import { ConfigError, loadConfig } from '../config.js';

/** Starts tracing when configured; `defaultName` names the process's service unless OTEL_SERVICE_NAME does. */
export async function preloadTracing(defaultName: string): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    // The entry reports the configuration error itself, in its own words.
    if (err instanceof ConfigError) return;
    throw err;
  }
  if (!config.OTEL_EXPORTER_OTLP_ENDPOINT) return;
  const { startTracing } = await import('./start.js');
  startTracing(config.OTEL_SERVICE_NAME ? undefined : defaultName);
}
