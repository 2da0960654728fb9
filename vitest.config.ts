import { defineConfig } from 'vitest/config';

// Integration tests talk to MongoDB: the embedded server (started once by test/global-setup.ts)
// unless MONGODB_URI points at a real deployment. Timeouts are generous because CI shares a slow machine.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ['default'],
  },
});
