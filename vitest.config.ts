import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

// Integration tests talk to MongoDB: the embedded server (started once by test/global-setup.ts)
// unless MONGODB_URI points at a real deployment. Timeouts are generous because CI shares a slow machine:
// tests that start gateways, workers or databases as processes took over 60 s under heavy load.
export default defineConfig({
  resolve: {
    // One graphql instance, as under Node: Apollo, type-graphql and graphql-ws load graphql's CommonJS
    // build, and Vite would give source files the ESM one; graphql refuses schemas and errors from
    // "another module or realm".
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ['default'],
  },
});
