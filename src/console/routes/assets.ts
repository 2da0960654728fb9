import { readFileSync } from 'node:fs';
import { AppError } from '../../domain/errors.js';
import type { ConsoleRoute } from './types.js';

// A Map, not an object: a name from the URL such as `constructor` or `__proto__` must find nothing.
const ASSETS = new Map<string, { type: string; body: Buffer }>([
  ['console.css', { type: 'text/css; charset=utf-8', body: readFileSync(new URL('../assets/console.css', import.meta.url)) }],
  ['console.js', { type: 'text/javascript; charset=utf-8', body: readFileSync(new URL('../assets/console.js', import.meta.url)) }],
  ['explorer.js', { type: 'text/javascript; charset=utf-8', body: readFileSync(new URL('../assets/explorer.js', import.meta.url)) }],
]);

/** The stylesheet and the script, from the gateway itself (no CDN); public. */
const assetRoutes: ConsoleRoute<Record<string, never>> = async (app) => {
  app.get<{ Params: { file: string } }>('/assets/:file', async (request, reply) => {
    const asset = ASSETS.get(request.params.file);
    if (!asset) throw new AppError('route_not_found');
    return reply.type(asset.type).header('cache-control', 'public, max-age=300').send(asset.body);
  });
};

export default assetRoutes;
