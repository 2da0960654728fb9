// The bare Apollo Server that `npm run bench:graphql` measures the GraphQL door against (not a test):
// the same @apollo/server, the same Fastify hand-off (src/http/graphql/apollo-handler.ts) and the same
// graphql-jit executor (compiled-executor.ts), from the compiled build, with none of the product's
// plugins, answering `lookup` with one guarded findOneAndUpdate (what `npm run bench`'s bare route does).
// Started by bench/graphql.ts; prints `BARE_APOLLO_URL=<url>` once listening.
import { ApolloServer } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
} from '@apollo/server/plugin/disabled';
import Fastify from 'fastify';
import { GraphQLInt, GraphQLNonNull, GraphQLObjectType, GraphQLSchema, GraphQLString } from 'graphql';
import { MongoClient, ObjectId } from 'mongodb';

const base = process.env.BENCH_SERVER_BUILD === 'tsx' ? '../src' : '../dist/src';
const { compiledExecution, compiledExecutor } = (await import(`${base}/http/graphql/compiled-executor.js`)) as typeof import('../src/http/graphql/compiled-executor.js');
const { apolloHandler } = (await import(`${base}/http/graphql/apollo-handler.js`)) as typeof import('../src/http/graphql/apollo-handler.js');

const client = await MongoClient.connect(process.env.MONGODB_URI!);
const accounts = client.db(`bench_bare_apollo_${process.pid}`).collection<{ _id: ObjectId; credits: number; updatedAt: Date }>('accounts');
const accountId = new ObjectId();
await accounts.insertOne({ _id: accountId, credits: 1_000_000_000, updatedAt: new Date() });

const LookupResult = new GraphQLObjectType({
  name: 'LookupResult',
  fields: { keyword: { type: new GraphQLNonNull(GraphQLString) }, definition: { type: new GraphQLNonNull(GraphQLString) }, credits: { type: new GraphQLNonNull(GraphQLInt) } },
});
const schema = new GraphQLSchema({
  query: new GraphQLObjectType({ name: 'Query', fields: { ok: { type: GraphQLString, resolve: () => 'ok' } } }),
  mutation: new GraphQLObjectType({
    name: 'Mutation',
    fields: {
      lookup: {
        type: new GraphQLNonNull(LookupResult),
        args: { keyword: { type: new GraphQLNonNull(GraphQLString) } },
        resolve: async (_root, { keyword }: { keyword: string }) => {
          const doc = await accounts.findOneAndUpdate(
            { _id: accountId, credits: { $gte: 1 } },
            { $inc: { credits: -1 }, $set: { updatedAt: new Date() } },
            { returnDocument: 'after', projection: { credits: 1 } },
          );
          return { keyword, definition: `${keyword}\n(noun) a definition`, credits: doc?.credits ?? 0 };
        },
      },
    },
  }),
});

const apollo = new ApolloServer({
  gateway: compiledExecutor(schema, compiledExecution(schema)),
  csrfPrevention: true,
  allowBatchedHttpRequests: false,
  stopOnTerminationSignals: false,
  plugins: [ApolloServerPluginLandingPageDisabled(), ApolloServerPluginCacheControlDisabled(), ApolloServerPluginInlineTraceDisabled()],
});
await apollo.start();
const app = Fastify({ logger: false });
const handler = apolloHandler(apollo, async () => ({}));
app.post('/graphql', handler);
app.get('/bench/cpu', async () => process.cpuUsage());
await app.listen({ port: 0, host: '127.0.0.1' });
const { port } = app.server.address() as { port: number };
process.stdout.write(`BARE_APOLLO_URL=http://127.0.0.1:${port}\n`);
process.on('SIGTERM', () => void app.close().then(() => client.close()).then(() => process.exit(0)));
