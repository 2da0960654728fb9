/**
 * What both GraphQL transports execute with: the schema, graphql-armor's limits (depth, aliases,
 * cost), the token limit, introspection, and one error formatter. HTTP hands these to Apollo Server;
 * the WebSocket door validates with the same rules.
 */
import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { ApolloServerPlugin } from '@apollo/server';
import { GraphQLError, NoSchemaIntrospectionCustomRule, specifiedRules, type GraphQLSchema, type ValidationRule } from 'graphql';
import type { Config } from '../../config.js';
import { AppError, ERROR_CATALOG } from '../../domain/errors.js';
import { errorFormatter, type ErrorFormatter } from '../../graphql/errors.js';
import type { GraphQLContext } from '../../graphql/context.js';
import { buildGraphQLSchema } from '../../graphql/schema.js';

export interface Execution {
  schema: GraphQLSchema;
  /** Armor's rules, for Apollo (which adds graphql-js' specified rules and its introspection switch). */
  armorRules: readonly ValidationRule[];
  /** Armor's Apollo plugins (HTTP only). */
  armorPlugins: ApolloServerPlugin<GraphQLContext>[];
  /** Every rule a WebSocket operation is validated with (what Apollo applies over HTTP). */
  socketRules: readonly ValidationRule[];
  formatError: ErrorFormatter;
  maxTokens: number;
}

export async function buildExecution(config: Config): Promise<Execution> {
  const schema = await buildGraphQLSchema();
  const armor = new ApolloArmor({
    maxDepth: { n: config.GRAPHQL_MAX_DEPTH },
    maxAliases: { n: config.GRAPHQL_MAX_ALIASES },
    costLimit: { maxCost: config.GRAPHQL_MAX_COST },
    // Tokens are limited by graphql-js' own parser option (maxTokens): armor's token plugin turns
    // every syntax error into a 500.
    maxTokens: { enabled: false },
    // Suggestions are hidden by formatError, for WebSocket results too (armor's plugin only covers
    // Apollo's HTTP pipeline).
    blockFieldSuggestion: { enabled: false },
  });
  const protection = armor.protect();
  return {
    schema,
    armorRules: protection.validationRules,
    // Cast: armor resolves @apollo/server's CommonJS typings, structurally the same plugins.
    armorPlugins: protection.plugins as unknown as ApolloServerPlugin<GraphQLContext>[],
    socketRules: [...specifiedRules, ...protection.validationRules, ...(config.GRAPHQL_INTROSPECTION ? [] : [NoSchemaIntrospectionCustomRule])],
    formatError: errorFormatter({ hideSuggestions: !config.GRAPHQL_INTROSPECTION }),
    maxTokens: config.GRAPHQL_MAX_TOKENS,
  };
}

/**
 * A subscription sent over HTTP (POST or GET) is the client's mistake, not a fault: graphql-js would
 * run the subscription field as a query and fail inside it (a masked 500). A validation rule of the
 * HTTP door only refuses it with a 400 that says where subscriptions are served.
 */
export const SubscriptionsOverWebSocketOnly: ValidationRule = (context) => ({
  OperationDefinition(node) {
    if (node.operation === 'subscription') {
      context.reportError(new GraphQLError(ERROR_CATALOG.subscription_over_http.message, { nodes: node, originalError: new AppError('subscription_over_http') }));
    }
  },
});
