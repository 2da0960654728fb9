import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';

/** The admin CLI against the test database (in process, plus one run of the real bin). */
const dbName = `t_cli_${process.pid}`;
let uri: string;

beforeAll(() => {
  uri = inject('mongoUri').replace(/\/?$/, `/${dbName}`);
});

async function cli(...argv: string[]) {
  return cliWithInput(undefined, ...argv);
}

async function cliWithInput(line: string | undefined, ...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const readLine = line === undefined ? undefined : async () => line;
  const code = await runCli(argv, { stdout: (t) => void (stdout += t), stderr: (t) => (stderr += t), env: { MONGODB_URI: uri }, readLine });
  return { code, stdout, stderr, json: () => JSON.parse(stdout) };
}

describe('gateway CLI', () => {
  let accountId: string;
  let keyId: string;
  let key: string;

  it('account create', async () => {
    const res = await cli('account', 'create', '--name', 'Acme', '--credits', '25');
    expect(res.code).toBe(0);
    expect(res.stderr).toBe('');
    expect(res.json()).toEqual({ accountId: expect.stringMatching(/^[0-9a-f]{24}$/), name: 'Acme', credits: 25 });
    accountId = res.json().accountId;
  });

  it('user create reads the password from stdin and never prints it; user list; user delete', async () => {
    const password = 'a long and unusual passphrase';
    const res = await cliWithInput(password, 'user', 'create', '--account', accountId, '--email', ' Ana@Example.com ', '--password-stdin');
    expect(res.code).toBe(0);
    expect(res.json()).toEqual({ userId: expect.stringMatching(/^[0-9a-f]{24}$/), email: 'ana@example.com', accountId });
    expect(res.stdout + res.stderr).not.toContain(password);
    const weak = await cliWithInput('password1234', 'user', 'create', '--account', accountId, '--email', 'bo@example.com', '--password-stdin');
    expect(weak.code).toBe(1);
    expect(weak.stderr).toContain('password is too common');
    const short = await cliWithInput('short', 'user', 'create', '--account', accountId, '--email', 'bo@example.com', '--password-stdin');
    expect(short.stderr).toContain('at least 12 characters');
    const taken = await cliWithInput(password, 'user', 'create', '--account', accountId, '--email', 'ana@example.com', '--password-stdin');
    expect(taken.stderr).toContain('already used');
    const noFlag = await cli('user', 'create', '--account', accountId, '--email', 'x@example.com');
    expect(noFlag.code).toBe(2);
    const list = await cli('user', 'list', '--account', accountId);
    expect(list.json()).toEqual([expect.objectContaining({ email: 'ana@example.com', accountId })]);
    expect(list.stdout).not.toContain('argon2');
    const deleted = await cli('user', 'delete', '--id', res.json().userId);
    expect(deleted.json()).toEqual({ userId: res.json().userId, sessionsEnded: 0 });
    expect((await cli('user', 'list', '--account', accountId)).json()).toEqual([]);
  });

  it('credits grant', async () => {
    const res = await cli('credits', 'grant', '--account', accountId, '--amount', '5');
    expect(res.json()).toEqual({ accountId, credits: 30 });
  });

  it('key create shows the key once', async () => {
    const res = await cli('key', 'create', '--account', accountId, '--name', 'prod');
    const out = res.json();
    expect(out).toEqual({ id: expect.stringMatching(/^[0-9a-f]{24}$/), key: expect.stringMatching(/^wi_live_[0-9a-f]{64}$/), prefix: out.key.slice(0, 12), name: 'prod', createdAt: expect.any(String) });
    keyId = out.id;
    key = out.key;
  });

  it('key list shows every setting and never the key', async () => {
    const res = await cli('key', 'list', '--account', accountId);
    const list = res.json();
    expect(list).toEqual([
      {
        id: keyId,
        name: 'prod',
        prefix: key.slice(0, 12),
        createdAt: expect.any(String),
        lastUsedAt: null,
        deletedAt: null,
        expiresAt: null,
        creditLimit: null,
        creditsLeft: null,
        refill: null,
        rateLimitPerMinute: null,
        permissions: ['lookup', 'generate', 'read', 'client_tokens', 'webhooks'],
        rolledFrom: null,
      },
    ]);
    expect(res.stdout).not.toContain(key);
  });

  it('key create takes the settings; key update changes them (never clears the expiry); a past time is refused', async () => {
    const accountId = (await cli('account', 'create', '--name', 'Settings')).json().accountId;
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const created = await cli('key', 'create', '--account', accountId, '--name', 'ci', '--expires-at', expiresAt, '--credit-limit', '10', '--refill', 'daily', '--rate-limit', '60', '--permissions', 'lookup,read');
    expect(created.code).toBe(0);
    const id = created.json().id;
    const listed = (await cli('key', 'list', '--account', accountId)).json().find((k: any) => k.id === id);
    expect(listed).toMatchObject({ expiresAt, creditLimit: 10, creditsLeft: 10, refill: 'daily', rateLimitPerMinute: 60, permissions: ['lookup', 'read'] });
    const updated = await cli('key', 'update', '--id', id, '--expires-at', 'never', '--rate-limit', 'none', '--permissions', 'generate,lookup');
    expect(updated.code).toBe(0);
    expect(updated.json()).toMatchObject({ id, expiresAt: null, creditLimit: 10, rateLimitPerMinute: null, permissions: ['lookup', 'generate'] });
    const past = await cli('key', 'update', '--id', id, '--expires-at', '2020-01-01T00:00:00Z');
    expect(past).toMatchObject({ code: 1, stderr: 'error: expiresAt must be in the future\n' });
    const refill = await cli('key', 'update', '--id', id, '--credit-limit', 'none', '--refill', 'monthly');
    expect(refill).toMatchObject({ code: 1, stderr: 'error: refill needs a credit limit\n' });
    const word = await cli('key', 'update', '--id', id, '--credit-limit', 'ten');
    expect(word.code).toBe(1);
    expect(word.stderr).toContain('--credit-limit must be a positive integer or none');
  });

  it('key roll answers the new key and when the old one ends; the grace is 0 to 7d', async () => {
    const accountId = (await cli('account', 'create', '--name', 'Rolling')).json().accountId;
    const created = (await cli('key', 'create', '--account', accountId, '--name', 'to roll', '--credit-limit', '4')).json();
    const before = Date.now();
    const rolled = await cli('key', 'roll', '--id', created.id, '--grace', '1h');
    expect(rolled.code).toBe(0);
    expect(rolled.json()).toEqual({ id: expect.stringMatching(/^[0-9a-f]{24}$/), key: expect.stringMatching(/^wi_live_[0-9a-f]{64}$/), prefix: expect.any(String), oldKeyExpiresAt: expect.any(String) });
    const ends = Date.parse(rolled.json().oldKeyExpiresAt) - before;
    expect(ends).toBeGreaterThan(3_590_000);
    expect(ends).toBeLessThan(3_700_000);
    const listed = (await cli('key', 'list', '--account', accountId)).json().find((k: any) => k.id === rolled.json().id);
    expect(listed).toMatchObject({ name: 'to roll', creditLimit: 4, rolledFrom: created.id });
    for (const grace of ['8d', '1w', '1.5h', '10']) {
      const bad = await cli('key', 'roll', '--id', rolled.json().id, '--grace', grace);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain('grace must be 0 or a duration up to 7d');
    }
  });

  it('key delete', async () => {
    const res = await cli('key', 'delete', '--id', keyId);
    expect(res.json()).toEqual({ id: keyId, deletedAt: expect.any(String) });
    expect((await cli('key', 'list', '--account', accountId)).json()[0].deletedAt).toBe(res.json().deletedAt);
  });

  it('audit export: JSON lines, each with its IP, actor and host', async () => {
    const res = await cli('audit', 'export', '--account', accountId);
    const lines = res.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((l) => l.event)).toEqual(['account.created', 'user.created', 'user.deleted', 'credits.granted', 'key.created', 'key.deleted']);
    for (const line of lines) {
      expect(line).toHaveProperty('ip');
      expect(typeof line.ip).toBe('string');
      expect(line.actor).toMatch(/^cli:/);
      expect(line.host).toBeTruthy();
    }
    expect(lines.find((l) => l.event === 'key.created')).toMatchObject({ keyId, keyPrefix: key.slice(0, 12) });
  });

  it.each([
    [['account', 'create'], 2, /account create needs --name/],
    [['account', 'create', '--name', 'x', '--credits=-4'], 1, /--credits must be a non-negative integer/],
    [['account', 'create', '--name', 'x', '--credits', '2.5'], 1, /--credits must be a non-negative integer/],
    [['credits', 'grant', '--account', 'nope', '--amount', '1'], 1, /account .* does not exist|account must/],
    [['credits', 'grant', '--account', '0'.repeat(24), '--amount', '0'], 1, /amount must be a positive integer/],
    [['key', 'create', '--account', '0'.repeat(24), '--name', 'x'], 1, /account must be the id of an existing account/],
    [['key', 'delete', '--id', 'xyz'], 1, /id must be the id of an existing key/],
    [['key', 'explode'], 2, /unknown command "key explode"/],
    [['key', 'list', '--account', 'a', '--bogus', '1'], 2, /Unknown option|bogus/],
    [['audit', 'export', '--account', 'zz'], 1, /account must be a 24-character hex account id/],
  ])('%j → exit %i with a clear message', async (argv, exit, message) => {
    const res = await cli(...(argv as string[]));
    expect(res.code).toBe(exit);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(message as RegExp);
    expect(res.stderr).not.toMatch(/\n\s+at /);
  });

  it('without MONGODB_URI and with no embedded database running it says what is missing', async () => {
    let stderr = '';
    const empty = path.join(tmpdir(), `cli-no-db-${process.pid}`);
    const code = await runCli(['key', 'list', '--account', 'x'], { stdout: () => {}, stderr: (t) => (stderr += t), env: { DATA_DIR: empty } });
    expect(code).toBe(2);
    expect(stderr).toMatch(/MONGODB_URI: is not set, and no embedded database is running from /);
    expect(stderr).toContain(path.join(empty, 'db'));
  });

  it('npm run cli runs src/cli/main.ts directly', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'key', 'list', '--account', accountId], { env: { ...process.env, MONGODB_URI: uri }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    const code = await new Promise((r) => child.on('close', r));
    expect(code).toBe(0);
    expect(JSON.parse(out)).toHaveLength(1);
  });

  it('the bin runs the same CLI', async () => {
    const child = spawn(process.execPath, ['bin/gateway-cli.js', 'key', 'list', '--account', accountId], { env: { ...process.env, MONGODB_URI: uri }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    const code = await new Promise((r) => child.on('close', r));
    expect(code).toBe(0);
    expect(JSON.parse(out)[0].id).toBe(keyId);
  });
});

afterAll(async () => {
  const { MongoClient } = await import('mongodb');
  const client = await MongoClient.connect(uri);
  await client.db(dbName).dropDatabase();
  await client.close();
});
