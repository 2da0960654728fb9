import 'reflect-metadata';
import { GraphQLObjectType, GraphQLSchema, printSchema } from 'graphql';
import { buildSchema, type AuthChecker, type PubSub } from 'type-graphql';
import { allows, isClientScope } from '../domain/client-tokens/scopes.js';
import { AppError } from '../domain/errors.js';
import { ClientTokenResolver } from './client-tokens.js';
import type { GraphQLContext } from './context.js';
import { resolvers } from './resolvers.js';
import { ROOT_TYPE_DESCRIPTIONS } from './types.js';

/**
 * The schema, built code-first. Resolvers take their services from the per-operation context, so the
 * schema does not depend on a running system: scripts/generate-schema.ts builds the very same one.
 */
export async function buildGraphQLSchema(): Promise<GraphQLSchema> {
  // validate: false: arguments are validated by the domain services (same rules and texts as REST).
  return describeRootTypes(
    await buildSchema({ resolvers: [...resolvers, ClientTokenResolver], validate: false, pubSub: noTopics, authChecker: scopeChecker, authMode: 'error' }),
  );
}

/** type-graphql builds Query, Mutation and Subscription without a description; front-end tools show one. */
function describeRootTypes(schema: GraphQLSchema): GraphQLSchema {
  const config = schema.toConfig();
  const roots = new Map(
    Object.entries(ROOT_TYPE_DESCRIPTIONS).flatMap(([name, description]) => {
      const type = schema.getType(name);
      return type instanceof GraphQLObjectType ? [[type, new GraphQLObjectType({ ...type.toConfig(), description })] as const] : [];
    }),
  );
  const described = <T>(type: T) => (type instanceof GraphQLObjectType ? (roots.get(type) ?? type) : type);
  return new GraphQLSchema({
    ...config,
    query: described(config.query),
    mutation: described(config.mutation),
    subscription: described(config.subscription),
    // In place, so that schema.graphql keeps its order.
    types: config.types.map(described),
  });
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
