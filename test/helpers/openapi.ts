/**
 * Checks real responses against the OpenAPI document the gateway serves: the JSON Schema (2020-12)
 * the document gives for that path, method and status validates the body, or the check fails naming
 * what differs. A status the document does not list for the operation fails too.
 *
 *   const doc = await fetchDocument(t.baseUrl);
 *   const check = responseChecker(doc);
 *   await check('POST', '/api/playground/query', res);   // res: a fetch Response
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'vitest';

export interface OpenApiDocument {
  openapi: string;
  servers?: { url: string }[];
  components?: { securitySchemes?: Record<string, unknown> };
  paths: Record<string, Record<string, Operation>>;
}

export interface Operation {
  security?: Record<string, string[]>[];
  parameters?: { in: string; name: string; required?: boolean; schema?: unknown }[];
  requestBody?: { content: Record<string, { schema: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: unknown }> }>;
}

export async function fetchDocument(baseUrl: string): Promise<OpenApiDocument> {
  const res = await fetch(`${baseUrl}/openapi.json`);
  expect(res.status).toBe(200);
  return (await res.json()) as OpenApiDocument;
}

/** `/api/playground/images/:jobId` (Fastify) → `/api/playground/images/{jobId}` (OpenAPI). */
export const openApiPath = (url: string) => url.replace(/:(\w+)/g, '{$1}');

export type ResponseCheck = (method: string, path: string, res: Response) => Promise<unknown>;

export function responseChecker(doc: OpenApiDocument): ResponseCheck {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats.default(ajv);
  return async (method, path, res) => {
    const operation = doc.paths[path]?.[method.toLowerCase()];
    expect(operation, `${method} ${path} is not in the document`).toBeDefined();
    const response = operation!.responses[String(res.status)];
    expect(response, `${method} ${path} answered ${res.status}, which the document does not list`).toBeDefined();
    const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
    if (!response!.content) {
      expect(await res.text(), `${method} ${path} ${res.status} has no body in the document`).toBe('');
      return undefined;
    }
    if (type !== 'application/json') {
      const media = Object.keys(response!.content).find((m) => m === type || (m.endsWith('/*') && type.startsWith(m.slice(0, -1))));
      expect(media, `${method} ${path} ${res.status} answered ${type}, documented: ${Object.keys(response!.content).join(', ')}`).toBeDefined();
      return res.arrayBuffer();
    }
    const schema = response!.content['application/json']?.schema;
    expect(schema, `${method} ${path} ${res.status}: no application/json schema`).toBeDefined();
    const body: unknown = await res.json();
    const validate = ajv.compile(schema as object);
    const ok = validate(body);
    expect(ok, `${method} ${path} ${res.status} ${JSON.stringify(body)}\n${ajv.errorsText(validate.errors)}`).toBe(true);
    return body;
  };
}
