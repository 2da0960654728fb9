// The standalone worker's log lines have the gateway's shape (pino's: numeric level, epoch-ms time,
// pid, hostname, msg), so one log pipeline parses both processes' output.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { spawnWorker, type WorkerProcess } from '../images/worker-process.js';

type Line = Record<string, unknown>;

let t: TestApp;
let worker: WorkerProcess | undefined;
const gatewayLines: Line[] = [];

beforeAll(async () => {
  t = await startTestApp({ IN_PROCESS_WORKER: 'false', LOG_LEVEL: 'info', logStream: { write: (line: string) => gatewayLines.push(JSON.parse(line) as Line) } });
});

afterAll(async () => {
  worker?.kill('SIGKILL');
  await worker?.exited;
  await t?.close();
});

/** Each key's JSON type, as a shape two lines can be compared by. */
const shape = (line: Line, keys: string[]) => Object.fromEntries(keys.map((k) => [k, typeof line[k]]));

describe('worker log lines', () => {
  it("are shaped like the gateway's: level 30 for info, time in epoch milliseconds, pid and hostname", async () => {
    const started = Date.now();
    const uri = new URL(t.config.MONGODB_URI!);
    uri.pathname = `/${t.connection.db!.databaseName}`;
    worker = spawnWorker({ MONGODB_URI: uri.toString() });
    await worker.ready;
    await fetch(`${t.baseUrl}/healthz`);
    const lines = worker
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Line);
    const line = lines.find((l) => l.msg === 'image worker started');
    expect(line, worker.output()).toBeDefined();
    expect(line).toMatchObject({ level: 30, pid: worker.proc.pid });
    expect(line!.time).toBeGreaterThanOrEqual(started);
    expect(line!.time).toBeLessThanOrEqual(Date.now());
    const keys = ['level', 'time', 'pid', 'hostname', 'msg'];
    const gateway = gatewayLines.find((l) => typeof l.msg === 'string');
    expect(gateway).toBeDefined();
    expect(shape(line!, keys)).toEqual(shape(gateway!, keys));
    expect(shape(line!, keys)).toEqual({ level: 'number', time: 'number', pid: 'number', hostname: 'string', msg: 'string' });
  });
});
