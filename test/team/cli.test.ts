/** The admin CLI and teams: `user create` makes an owner; `member add` adds an existing user to another account. */
import { describe, expect, inject, it } from 'vitest';
import { runCli } from '../../src/cli/main.js';
import { connectDatabase } from '../../src/data/connection.js';

const dbName = `t_team_cli_${process.pid}`;

async function cli(line: string | undefined, ...argv: string[]) {
  let stdout = '';
  let stderr = '';
  const uri = inject('mongoUri').replace(/\/?$/, `/${dbName}`);
  const code = await runCli(argv, { stdout: (t) => void (stdout += t), stderr: (t) => (stderr += t), env: { MONGODB_URI: uri }, readLine: line === undefined ? undefined : async () => line });
  return { code, stdout, stderr, json: () => JSON.parse(stdout) };
}

describe('CLI: members', () => {
  it('user create makes an owner; member add gives an existing user a role in another account, once', async () => {
    const acme = (await cli(undefined, 'account', 'create', '--name', 'Acme')).json().accountId as string;
    const globex = (await cli(undefined, 'account', 'create', '--name', 'Globex')).json().accountId as string;
    const created = await cli('a long and unusual passphrase', 'user', 'create', '--account', acme, '--email', 'ana@example.com', '--password-stdin');
    expect(created.code).toBe(0);
    const userId = created.json().userId as string;

    const added = await cli(undefined, 'member', 'add', '--account', globex, '--email', 'Ana@Example.com', '--role', 'developer');
    expect(added.code).toBe(0);
    expect(added.json()).toEqual({ userId, email: 'ana@example.com', accountId: globex, role: 'developer' });

    const again = await cli(undefined, 'member', 'add', '--account', globex, '--email', 'ana@example.com', '--role', 'viewer');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already a member');
    expect((await cli(undefined, 'member', 'add', '--account', globex, '--email', 'nobody@example.com', '--role', 'viewer')).stderr).toContain('existing console user');
    expect((await cli(undefined, 'member', 'add', '--account', globex, '--email', 'ana@example.com', '--role', 'boss')).stderr).toContain('role must be one of');
    expect((await cli(undefined, 'member', 'add', '--account', globex, '--email', 'ana@example.com')).code).toBe(2);

    const connection = await connectDatabase(inject('mongoUri'), { dbName });
    try {
      const user = await connection.db!.collection('console_users').findOne({ email: 'ana@example.com' });
      expect(user?.memberships.map((m: { accountId: { toHexString(): string }; role: string }) => [m.accountId.toHexString(), m.role])).toEqual([
        [acme, 'owner'],
        [globex, 'developer'],
      ]);
      const joined = await connection.db!.collection('audit_entries').findOne({ event: 'member.joined', accountId: { $exists: true } });
      expect(joined?.actor).toMatch(/^cli:/);
      expect(joined?.details).toMatchObject({ userId, role: 'developer', via: 'cli' });
    } finally {
      await connection.close();
    }
  });
});
