import 'reflect-metadata';
import { printSchema, type GraphQLSchema } from 'graphql';
import { buildSchema, type AuthChecker, type PubSub } from 'type-graphql';
import { allows, isClientScope } from '../domain/client-tokens/scopes.js';
import { AppError } from '../domain/errors.js';
import { ClientTokenResolver } from './client-tokens.js';
import type { GraphQLContext } from './context.js';
import { resolvers } from './resolvers.js';

/**
 * The schema, built code-first. Resolvers take their services from the per-operation context, so the
 * schema does not depend on a running system: scripts/generate-schema.ts builds the very same one.
 */
export async function buildGraphQLSchema(): Promise<GraphQLSchema> {
  // validate: false: arguments are validated by the domain services (same rules and texts as REST).
  return buildSchema({ resolvers: [...resolvers, ClientTokenResolver], validate: false, pubSub: noTopics, authChecker: scopeChecker, authMode: 'error' });
}

/**
 * `@Authorized('lookup')` etc.: a client token needs that scope (API keys have them all). A refusal is
 * FORBIDDEN for that field only, before its resolver runs, so nothing is charged.
 */
const scopeChecker: AuthChecker<GraphQLContext> = ({ context }, scopes) => {
  for (const scope of scopes) {
    if (!isClientScope(scope) || !allows(context.principal, scope)) throw new AppError('scope_not_allowed');
  }
  return true;
};

/**
 * type-graphql insists on a PubSub when a schema has subscriptions, even though `jobStatus` brings its
 * own event stream (cross-process job events); nothing may publish to or subscribe by topic.
 */
const noTopics: PubSub = {
  publish() {
    throw new Error('GraphQL subscriptions here do not use topics');
  },
  subscribe() {
    throw new Error('GraphQL subscriptions here do not use topics');
  },
};

/** The SDL of schema.graphql: graphql-js' printing of the served schema, byte for byte. */
export function printSchemaFile(schema: GraphQLSchema): string {
  return `${printSchema(schema)}\n`;
}
