import { describe, expect, it } from 'vitest';
import { QueueErrorLog } from '../../src/queue/queue-errors.js';

function named(name: string, message = 'x'): Error {
  const err = new Error(message);
  err.name = name;
  return err;
}

function recorder() {
  const lines: { level: string; msg?: string; obj: Record<string, unknown> }[] = [];
  const at = (level: string) => (obj: object, msg?: string) => lines.push({ level, msg, obj: obj as Record<string, unknown> });
  return { lines, log: { info: at('info'), warn: at('warn'), error: at('error') } };
}

describe('queue error log', () => {
  it('logs an outage once, summarizes it at most once per interval, and a recovery ends it', () => {
    let now = 0;
    const { lines, log } = recorder();
    const errors = new QueueErrorLog(log, 10_000, () => now);
    errors.report(named('MongoNetworkError', 'read ECONNRESET'), 'agenda');
    for (let i = 0; i < 50; i++) {
      now += 100;
      errors.report(named('MongoServerSelectionError'), 'agenda');
    }
    expect(lines.map((l) => l.msg)).toEqual(['queue paused: database unreachable']);
    now = 10_000;
    errors.report(named('MongoPoolClearedError'), 'heartbeat');
    expect(lines.map((l) => l.msg)).toEqual(['queue paused: database unreachable', 'queue still paused: database unreachable']);
    expect(lines[1].obj).toMatchObject({ errors: 51, downForMs: 10_000 });
    expect(lines[1].obj.kinds).toEqual(expect.arrayContaining(['MongoServerSelectionError', 'MongoPoolClearedError']));

    now = 12_000;
    errors.recovered();
    expect(lines[2]).toMatchObject({ level: 'info', msg: 'queue resumed: database reachable', obj: { downForMs: 12_000 } });
    // A recovery without an outage says nothing; the next failure is a new outage.
    errors.recovered();
    errors.report(named('MongoNetworkError'), 'agenda');
    expect(lines.map((l) => l.msg).slice(3)).toEqual(['queue paused: database unreachable']);
  });

  it('logs other errors one by one', () => {
    const { lines, log } = recorder();
    const errors = new QueueErrorLog(log);
    errors.report(new TypeError('boom'), 'agenda');
    errors.report('not an error', 'changestream');
    expect(lines).toEqual([
      { level: 'warn', msg: 'queue error', obj: { err: 'TypeError: boom', source: 'agenda' } },
      { level: 'warn', msg: 'queue error', obj: { err: 'not an error', source: 'changestream' } },
    ]);
  });
});
