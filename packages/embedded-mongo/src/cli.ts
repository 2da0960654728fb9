// `npm run db -- --port=27017 --dbpath=./data/db`: runs the embedded server in the foreground and prints
// `MONGODB_URI=…` once it accepts connections. For tests and local development, not production.
import { parseArgs } from 'node:util';
import { startEmbeddedMongo } from './index.js';

const USAGE =
  'usage: npm run db -- [--port=N (default 27017, 0: any free port)] [--dbpath=DIR (persist; default: in memory)] [--host=ADDR (default 127.0.0.1)]' +
  ' [--journal-compact-bytes=N (with --dbpath: fold the journal into a new snapshot once it passes N bytes and the snapshot\'s size; default 64 MiB)]' +
  ' [--changelog-mb=N (MiB of change events kept for change streams to resume from; default 64)]';

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

let values: { port?: string; dbpath?: string; host?: string; 'journal-compact-bytes'?: string; 'changelog-mb'?: string; help?: boolean };
try {
  ({ values } = parseArgs({
    options: {
      port: { type: 'string' },
      dbpath: { type: 'string' },
      host: { type: 'string' },
      'journal-compact-bytes': { type: 'string' },
      'changelog-mb': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
    allowPositionals: false,
  }));
} catch (e) {
  fail((e as Error).message);
}
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}

const port = values.port === undefined ? 27017 : Number(values.port);
if (!/^\d+$/.test(values.port ?? '0') || port > 65535) fail(`--port must be an integer between 0 and 65535, got "${values.port}"`);
if (values.dbpath === '') fail('--dbpath must name a directory');
const host = values.host ?? '127.0.0.1';
const compactBytes = values['journal-compact-bytes'];
if (compactBytes !== undefined && !/^[1-9]\d*$/.test(compactBytes)) fail(`--journal-compact-bytes must be a positive integer, got "${compactBytes}"`);
const changelogMb = values['changelog-mb'];
if (changelogMb !== undefined && !(/^\d+(\.\d+)?$/.test(changelogMb) && Number(changelogMb) > 0)) fail(`--changelog-mb must be a positive number, got "${changelogMb}"`);

const server = await startEmbeddedMongo({
  port,
  host,
  dbPath: values.dbpath,
  journalCompactBytes: compactBytes === undefined ? undefined : Number(compactBytes),
  changelogMb: changelogMb === undefined ? undefined : Number(changelogMb),
});
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
