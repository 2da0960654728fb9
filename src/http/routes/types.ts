import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import type { Services } from '../../services.js';

/** Options every route module receives from buildApp(). */
export interface RouteOptions {
  config: Config;
  services: Services;
  /** Base address for URLs handed to clients (signed image URLs). */
  baseUrlOf: (request: FastifyRequest) => string;
}

/** A REST route module: a Fastify plugin (see src/http/app.ts for how to add one). */
export type RouteModule = FastifyPluginAsync<RouteOptions>;
