/** `node --import ./src/tracing/worker.ts workers/main.ts`: a worker's traces (see preload.ts). */
import { preloadTracing } from './preload.js';

await preloadTracing('credit-gateway-worker');
