import type { FastifyPluginAsync, FastifyPluginOptions, FastifyRequest } from 'fastify';

/** A REST route module: a Fastify plugin given only the interfaces its routes call. */
export type RouteModule<Deps extends FastifyPluginOptions> = FastifyPluginAsync<Deps>;

/** Base address for URLs handed to clients (signed image URLs). */
export type BaseUrlOf = (request: Pick<FastifyRequest, 'protocol' | 'headers'>) => string;
