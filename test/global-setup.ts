import type { TestProject } from 'vitest/node';
import { startEmbeddedMongo, type EmbeddedMongo } from '@credit-gateway/embedded-mongo';

// One database server for the whole run. With MONGODB_URI set, the suite runs against that
// deployment instead and starts nothing.
let server: EmbeddedMongo | undefined;

export async function setup(project: TestProject): Promise<void> {
  let uri = process.env.MONGODB_URI;
  if (!uri) {
    server = await startEmbeddedMongo({ port: 0 });
    uri = server.uri;
    console.log(`[tests] embedded MongoDB at ${uri} (set MONGODB_URI to test against a real server)`);
  } else {
    console.log(`[tests] using MONGODB_URI=${uri.replace(/\/\/[^@]*@/, '//***@')}`);
  }
  project.provide('mongoUri', uri);
  process.env.TEST_MONGODB_URI = uri;
}

export async function teardown(): Promise<void> {
  await server?.stop();
}

declare module 'vitest' {
  export interface ProvidedContext {
    mongoUri: string;
  }
}
