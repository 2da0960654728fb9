/**
 * The REST API's OpenAPI 3.1 document, generated from the route schemas (@fastify/swagger in dynamic
 * mode with fastify-type-provider-zod's transform), at `GET /openapi.json`, and an API reference at
 * `GET /docs` (@fastify/swagger-ui: Swagger UI's own files from node_modules, no CDN, no inline script
 * or style) under a strict CSP. Both are public: they describe the API, they hold nothing of anyone's.
 *
 * Register before the routes (the document collects them as they are added). A route is documented
 * when it is REST: everything but `/graphql`, the console and these pages. Its `security` follows its
 * `config.auth`, so the document cannot disagree with the edge about who may call it.
 */
import { readFileSync } from 'node:fs';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { createJsonSchemaTransform } from 'fastify-type-provider-zod';
import { VERSION } from '../../version.js';

const contrastCss = readFileSync(new URL('./docs-contrast.css', import.meta.url), 'utf8');

export const DOCS_PREFIX = '/docs';
export const OPENAPI_PATH = '/openapi.json';

/** Paths that are not REST: GraphQL has its own schema (schema.graphql), the console is pages. */
export function isRestPath(url: string): boolean {
  return !/^\/(graphql|console|docs)(\/|$)/.test(url) && url !== OPENAPI_PATH;
}

/**
 * The reference page's policy: Swagger UI's scripts, styles and images from this origin only (its logo
 * and icons are data: images), its fetches of the document and "Try it out" calls to this origin (and
 * PUBLIC_BASE_URL's), no inline script or style, no framing, no plugins, no forms.
 */
export function docsCsp(publicBaseUrl: string | undefined): string {
  const api = publicBaseUrl ? ` ${new URL(publicBaseUrl).origin}` : '';
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self'${api}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export async function registerOpenApi(app: FastifyInstance, opts: { publicBaseUrl?: string }): Promise<void> {
  const zodTransform = createJsonSchemaTransform({ skipList: [] });
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.1',
      info: {
        title: 'credit-gateway REST API',
        version: VERSION,
        description:
          'Image generation and dictionary definitions, paid in credits. Authenticate with an API key: `Authorization: Bearer wi_live_…`. ' +
          'Errors are JSON `{error, code, requestId}`; checks run in the order 401 → 400 → 402 → work. GraphQL (`/graphql`) is described by its own schema.',
      },
      servers: opts.publicBaseUrl ? [{ url: opts.publicBaseUrl.replace(/\/+$/, '') }] : [],
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'An API key (`wi_live_` + 64 hex characters), created in the console or the CLI.' },
        },
      },
    },
    transform: (input) => {
      if (!isRestPath(input.url)) return { schema: { hide: true }, url: input.url };
      const out = zodTransform(input);
      const auth = (input.route.config as { auth?: string } | undefined)?.auth;
      return { url: out.url, schema: { ...out.schema, security: auth === 'apiKey' ? [{ apiKey: [] }] : [] } };
    },
  });

  app.get(OPENAPI_PATH, { schema: { hide: true } }, async (_request, reply) =>
    // Public and credential-free: any page (an SDK generator, an editor) may read it.
    reply.header('access-control-allow-origin', '*').header('cache-control', 'no-cache').send(app.swagger()),
  );

  await app.register(fastifySwaggerUi, {
    routePrefix: DOCS_PREFIX,
    staticCSP: docsCsp(opts.publicBaseUrl),
    // BaseLayout: no top bar, whose logo needs an inline <style> (the CSP refuses it) and whose URL
    // field has no label. No deep links: they nest a link in each operation's toggle button.
    uiConfig: { layout: 'BaseLayout', deepLinking: false, defaultModelsExpandDepth: 0 },
    theme: { title: 'credit-gateway API reference', css: [{ filename: 'contrast.css', content: contrastCss }] },
    uiHooks: {
      onRequest: (_request, reply, done) => {
        reply.header('x-content-type-options', 'nosniff').header('referrer-policy', 'no-referrer');
        done();
      },
    },
  });
}
