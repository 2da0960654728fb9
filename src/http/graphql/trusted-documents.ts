/**
 * Trusted documents at the GraphQL door (CONTRACT "The GraphQL door", trusted documents):
 *  - `PUT/GET /api/graphql/documents`, `DELETE /api/graphql/documents/{id}`: an account registers the
 *    operations of its front-end in Apollo's persisted query manifest format, each body checked against
 *    the schema and the rules the door runs documents with;
 *  - an Apollo plugin for client tokens minted with `trustedDocumentsOnly`: the document must be one the
 *    account registered (sent by hash, as Apollo's persisted query extension, or in full), else
 *    `document_not_trusted` before anything runs. A hash alone is answered from the registered body.
 * Everyone else keeps Apollo's automatic persisted queries as Apollo does them.
 */
import type { ApolloServerPlugin } from '@apollo/server';
import { getOperationAST, parse, validate } from 'graphql';
import { z } from 'zod';
import { AppError } from '../../domain/errors.js';
import type { DocumentCheck, TrustedDocuments } from '../../domain/trusted-documents/service.js';
import type { Principal } from '../../domain/principal.js';
import type { GraphQLContext } from '../../graphql/context.js';
import { toRequestError } from '../../graphql/errors.js';
import { API_KEY, EDGE, errorResponses, JSON_BODY } from '../schemas/errors.js';
import type { RouteModule } from '../routes/types.js';
import type { Execution } from './execution.js';

export type DocumentRegistry = Pick<TrustedDocuments, 'register' | 'list' | 'delete' | 'trusted'>;

/** A manifest body checked as the door would run it: it parses, validates with every rule, holds one operation. */
export function documentCheck(execution: Pick<Execution, 'schema' | 'socketRules' | 'maxTokens'>): DocumentCheck {
  return (body) => {
    let document;
    try {
      document = parse(body, { maxTokens: execution.maxTokens });
    } catch (err) {
      return { ok: false, message: (err as Error).message };
    }
    const errors = validate(execution.schema, document, execution.socketRules);
    if (errors.length) return { ok: false, message: errors[0]!.message };
    const operation = getOperationAST(document);
    if (!operation) return { ok: false, message: 'a manifest entry must hold exactly one operation' };
    return { ok: true, type: operation.operation, name: operation.name?.value ?? null };
  };
}

/** Whether this caller may run only registered documents. */
export function trustedOnly(principal: Principal): boolean {
  return principal.token?.trustedDocumentsOnly === true;
}

/**
 * For a `trustedDocumentsOnly` token: the request's document must be registered for its account, by
 * the hash it sends or by the SHA-256 of its text. A hash alone is given its registered body before
 * Apollo's persisted query step (which then checks hash and text as it always does). A refusal is
 * thrown where Apollo answers a plugin's error with its status, once the operation is resolved: an
 * unregistered request runs as a stand-in document that is refused there, before anything executes.
 */
export function trustDocuments(documents: DocumentRegistry): ApolloServerPlugin<GraphQLContext> {
  const refused = {
    async didResolveOperation(): Promise<void> {
      throw toRequestError(new AppError('document_not_trusted'));
    },
  };
  return {
    async requestDidStart({ contextValue, request }) {
      if (!trustedOnly(contextValue.principal)) return;
      const extensions = request.extensions as { persistedQuery?: { sha256Hash?: unknown } } | undefined;
      const sha256Hash = typeof extensions?.persistedQuery?.sha256Hash === 'string' ? extensions.persistedQuery.sha256Hash : null;
      const body = await documents.trusted(contextValue.principal.accountId, { query: request.query, sha256Hash });
      if (body !== null) {
        request.query ??= body;
        return;
      }
      request.query = STAND_IN;
      request.extensions = { ...request.extensions, persistedQuery: undefined };
      return refused;
    },
  };
}

/** What an unregistered request of a trusted-only token parses as, to be refused before it runs. */
const STAND_IN = '{ __typename }';

const HASH_PARAM = z.object({ id: z.string().meta({ description: 'The document id: the SHA-256 (hex) of its body.' }) });
const operationEntry = z.object({
  id: z.string(),
  name: z.string(),
  type: z.enum(['query', 'mutation', 'subscription']),
  createdAt: z.date(),
});
/** Documented shape of the manifest; its rules are checked by TrustedDocuments.register (texts that name the operation). */
const manifestBody = z.unknown().meta({
  type: 'object',
  required: ['format', 'version', 'operations'],
  description: "Apollo's persisted query manifest, as `@apollo/generate-persisted-query-manifest` writes it.",
  properties: {
    format: { type: 'string', enum: ['apollo-persisted-query-manifest'] },
    version: { type: 'integer', enum: [1] },
    operations: {
      type: 'array',
      maxItems: 1000,
      items: {
        type: 'object',
        required: ['id', 'body', 'type'],
        properties: {
          id: { type: 'string', description: 'SHA-256 (hex) of body' },
          name: { type: 'string' },
          type: { type: 'string', enum: ['query', 'mutation', 'subscription'] },
          body: { type: 'string', description: 'The GraphQL document: one operation and its fragments' },
        },
      },
    },
  },
});

export const documentRoutes: RouteModule<{ documents: DocumentRegistry; check: DocumentCheck }> = async (app, { documents, check }) => {
  const put = {
    summary: "Register the operations of the account's front-end (trusted documents, free)",
    body: manifestBody,
    response: { 200: z.object({ registered: z.int().min(0), total: z.int().min(0) }), ...errorResponses([...EDGE, ...API_KEY, ...JSON_BODY, 'invalid_request']) },
  };
  app.put('/api/graphql/documents', { config: { auth: 'apiKey', operation: 'registerDocuments' }, schema: put }, async (request, reply) => {
    return reply.header('cache-control', 'no-store').send(await documents.register(request.principal!.accountId, request.body, check));
  });

  const list = { summary: "List the account's registered documents", response: { 200: z.object({ documents: z.array(operationEntry) }), ...errorResponses([...EDGE, ...API_KEY]) } };
  app.get('/api/graphql/documents', { config: { auth: 'apiKey', operation: 'listDocuments' }, schema: list }, async (request, reply) => {
    return reply.header('cache-control', 'no-store').send({ documents: await documents.list(request.principal!.accountId) });
  });

  const remove = {
    summary: 'Delete a registered document',
    params: HASH_PARAM,
    response: { 204: z.undefined().meta({ description: 'Deleted.' }), ...errorResponses([...EDGE, ...API_KEY, 'document_not_found']) },
  };
  app.delete('/api/graphql/documents/:id', { config: { auth: 'apiKey', operation: 'deleteDocument' }, schema: remove }, async (request, reply) => {
    await documents.delete(request.principal!.accountId, request.params.id);
    return reply.code(204).send(undefined);
  });
};
