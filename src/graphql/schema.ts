import 'reflect-metadata';
import { GraphQLObjectType, GraphQLSchema, printSchema } from 'graphql';
import { buildSchema, type AuthChecker, type PubSub } from 'type-graphql';
import { AppError } from '../domain/errors.js';
import { tokenRefusal } from '../domain/operations/access.js';
import { OPERATIONS, operationOfGraphQLField } from '../domain/operations/catalog.js';
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
  const schema = describeRootTypes(
    await buildSchema({ resolvers: [...resolvers, ClientTokenResolver], validate: false, pubSub: noTopics, authChecker: scopeChecker, authMode: 'error' }),
  );
  const uncatalogued = rootFieldsOf(schema).filter(({ type, field }) => {
    const name = operationOfGraphQLField(field);
    return !name || OPERATIONS[name].graphql?.type !== type;
  });
  if (uncatalogued.length) {
    throw new Error(`GraphQL root fields missing from the operation catalog: ${uncatalogued.map(({ type, field }) => `${type}.${field}`).join(', ')}`);
  }
  return schema;
}

/** Every root field the schema serves, by root type. */
export function rootFieldsOf(schema: GraphQLSchema): { type: 'Query' | 'Mutation' | 'Subscription'; field: string }[] {
  const roots = [
    ['Query', schema.getQueryType()],
    ['Mutation', schema.getMutationType()],
    ['Subscription', schema.getSubscriptionType()],
  ] as const;
  return roots.flatMap(([type, root]) => Object.keys(root?.getFields() ?? {}).map((field) => ({ type, field })));
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
 * `@Authorized()` on every root field: a client token needs the scope the operation catalog names for
 * that field (API keys and console users pass; a key's own permissions were checked at admission, for
 * the whole operation). A refusal is FORBIDDEN for that field only, before its resolver runs, so
 * nothing is charged. A root field the catalog does not know is a fault (it fails closed).
 */
const scopeChecker: AuthChecker<GraphQLContext> = ({ context, info }) => {
  const name = operationOfGraphQLField(info.fieldName);
  if (!name) throw new Error(`GraphQL field ${info.parentType.name}.${info.fieldName} is not in the operation catalog`);
  const refusal = tokenRefusal(context.principal, name);
  if (refusal) throw new AppError(refusal);
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
