// `npm run db -- --port=27017 --dbpath=./data/db`: runs the embedded server in the foreground.
import { startEmbeddedMongo } from './index.js';

function arg(name: string): string | undefined {
  const prefix = `--${name}=`;
  const hit = process.argv.slice(2).find((a) => a.startsWith(prefix));
  return hit?.slice(prefix.length);
}

const portArg = arg('port');
const port = portArg === undefined ? 27017 : Number(portArg);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`--port must be an integer between 0 and 65535, got "${portArg}"`);
  process.exit(2);
}
const dbPath = arg('dbpath');
const host = arg('host') ?? '127.0.0.1';

const server = await startEmbeddedMongo({ port, host, dbPath });
console.log(`MONGODB_URI=${server.uri}`);

let stopping = false;
const shutdown = (): void => {
  if (stopping) return;
  stopping = true;
  server.stop().then(
    () => process.exit(0),
    (e: unknown) => {
      console.error(e);
      process.exit(1);
    },
  );
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
