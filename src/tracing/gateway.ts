/** `node --import ./src/tracing/gateway.ts src/main.ts`: the gateway's traces (see preload.ts). */
import { preloadTracing } from './preload.js';

await preloadTracing('credit-gateway');
