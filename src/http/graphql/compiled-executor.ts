/**
 * Apollo Server executes `/graphql` over HTTP through its `gateway` interface (`load` returns an
 * executor) with graphql-jit: each document is compiled once into a function, then every request with
 * that document runs the function (issue 18). Apollo still does everything around execution: CSRF
 * prevention, parsing and validation with the armor rules (its document store caches both), the
 * plugins, error formatting and status codes.
 *
 * Behaviour stays graphql-js': the resolvers (with type-graphql's @Authorized middleware) are the same
 * functions, and jit's errors are turned back into graphql-js GraphQLErrors (jit's carry no
 * `extensions` object, which Apollo's error normaliser reads). Where jit would say something graphql-js
 * says differently, graphql-js runs instead: a request error (bad variables: no `data`, so nothing ran)
 * is answered by graphql-js' own execute, and a document jit cannot compile never uses jit.
 */
import type { ApolloServerOptionsWithGateway, BaseContext } from '@apollo/server';
import { execute, GraphQLError, type DocumentNode, type ExecutionResult, type GraphQLSchema } from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';

type Gateway = ApolloServerOptionsWithGateway<BaseContext>['gateway'];

/** Runs an operation of a parsed and validated document, compiled once per document and operation name. */
export type CompiledExecution = (
  document: DocumentNode,
  operationName: string | undefined,
  context: unknown,
  variables: Record<string, unknown> | undefined,
) => Promise<ExecutionResult>;

export function compiledExecution(schema: GraphQLSchema): CompiledExecution {
  // Apollo's document store hands back the same DocumentNode for
  // the same query text, so the compiled function lives exactly as long as the parsed document it was
  // made from. null: jit declined.
  const compiled = new WeakMap<DocumentNode, Map<string | undefined, CompiledQuery | null>>();
  const compiledFor = (document: DocumentNode, operationName: string | undefined): CompiledQuery | null => {
    let byName = compiled.get(document);
    if (!byName) compiled.set(document, (byName = new Map()));
    let entry = byName.get(operationName);
    if (entry === undefined) {
      const result = compileQuery(schema, document, operationName, { disablingCapturingStackErrors: true });
      entry = isCompiledQuery(result) ? result : null;
      byName.set(operationName, entry);
    }
    return entry;
  };

  return async (document, operationName, context, variables) => {
    const args = { schema, document, contextValue: context, variableValues: variables, operationName };
    const query = compiledFor(document, operationName);
    if (!query) return execute(args);
    const result = (await query.query(undefined, context, variables ?? {})) as ExecutionResult;
    if (!result.errors) return result;
    if (!('data' in result)) return execute(args);
    return { ...result, errors: result.errors.map(toGraphQLJsError) };
  };
}

export function compiledExecutor(schema: GraphQLSchema, run: CompiledExecution = compiledExecution(schema)): Gateway {
  return {
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: '' });
      return () => undefined;
    },
    async load() {
      return {
        executor: ({ document, request, context }) => run(document, request.operationName ?? undefined, context, request.variables),
      };
    },
    async stop() {},
  };
}

/** jit's error as graphql-js' own: same message, locations, path and original error. */
function toGraphQLJsError(error: GraphQLError): GraphQLError {
  const converted = new GraphQLError(error.message, { path: error.path, originalError: error.originalError, extensions: error.extensions });
  if (error.locations) (converted as { locations?: GraphQLError['locations'] }).locations = error.locations;
  return converted;
}
