/**
 * Admin CLI (`npm run cli -- <command>`, or the `gateway-cli` bin): accounts, credits, keys, audit.
 * JSON on stdout; errors as one clear line on stderr with a non-zero exit code. Connects with
 * MONGODB_URI. Every change is made through the domain services, so it is validated and audited
 * exactly as any other door's.
 */
import { randomUUID } from 'node:crypto';
import { hostname, networkInterfaces, userInfo } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig, type ConfigInput } from '../config.js';
import { connectDatabase, isDatabaseUnavailableError } from '../data/connection.js';
import { sharedDatabaseUri } from '../data/embedded-address.js';
import type { AuditActor } from '../domain/audit/types.js';
import { isAppError } from '../domain/errors.js';
import { processOutput } from './process-io.js';
import type { KeySettingsInput } from '../domain/keys/settings.js';
import { buildAdminServices, type AdminServices } from './services.js';

export const USAGE = `Usage: gateway-cli <command> [options]   (connects with MONGODB_URI; unset: the embedded database npm start runs from DATA_DIR)

  account create --name N [--credits C]     create an account      → {"accountId","name","credits"}
  credits grant --account ID --amount C     add credits (audited)  → {"accountId","credits"}
  key create --account ID --name N [settings]
                                            create an API key      → {"id","key","prefix","name","createdAt"} (key shown once)
      settings: --expires-at ISO|never  --credit-limit N|none  --refill daily|monthly|none
                --rate-limit N|none  --permissions lookup,generate,read,client_tokens,webhooks
  key update --id KEYID [settings]          change a key's settings (audited); an absent one stays
                                            → the key as key list shows it
  key roll --id KEYID [--grace D]           a new key with the old one's name and settings (shown once);
                                            the old key keeps working for D (0 default, 30s, 1h, 24h, 7d)
                                            → {"id","key","prefix","oldKeyExpiresAt"}
  key list --account ID                     list the account's keys with every setting
  key delete --id KEYID                     revoke a key (audited) → {"id","deletedAt"}
  audit export --account ID                 audit entries, one JSON object per line
  user create --account ID --email E --password-stdin
                                            create a console user (password: one line on stdin)
                                                                   → {"userId","email","accountId"}
  user list --account ID                    list the account's console users
  user delete --id USERID                   delete a console user and end their sessions
  member add --account ID --email E --role R
                                            add an existing console user to another account with a role
                                            (owner, admin, developer, viewer) → {"userId","email","accountId","role"}
  usage --account ID [--from D] [--to D]    usage per UTC day, service and source (key id or console),
                                            dates YYYY-MM-DD, default the last 30 days
                                            → [{"day","service","source","calls","credits","refunded"}]
`;

export interface CliIo {
  /** A promise: the reader lags, wait before writing more. */
  stdout: (text: string) => Promise<void> | void;
  stderr: (text: string) => void;
  env: ConfigInput | NodeJS.ProcessEnv;
  /** One line from standard input (for --password-stdin); default: process.stdin. */
  readLine?: () => Promise<string>;
}

/** Exit codes: 0 done, 1 the command failed, 2 usage or configuration error. */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (parsed.command === 'help') {
    io.stdout(USAGE);
    return 0;
  }
  let uri: string;
  try {
    const config = loadConfig(io.env);
    uri = await sharedDatabaseUri(config);
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n`);
    return 2;
  }

  let connection;
  try {
    connection = await connectDatabase(uri, { serverSelectionTimeoutMS: 5000 });
  } catch (err) {
    io.stderr(`error: cannot reach the database at ${redact(uri)}: ${(err as Error).message}\n`);
    return 1;
  }
  const services = await buildAdminServices({ connection });
  try {
    await execute(parsed, services, io);
    return 0;
  } catch (err) {
    if (isAppError(err)) io.stderr(`error: ${err.message}\n`);
    else if (isDatabaseUnavailableError(err)) io.stderr(`error: the database became unreachable: ${(err as Error).message}\n`);
    else io.stderr(`error: ${(err as Error)?.message ?? String(err)}\n`);
    return 1;
  } finally {
    await services.close();
    await connection.close();
  }
}

type Parsed = { command: string; values: Record<string, string | undefined> };

const KEY_SETTING_OPTIONS = ['expires-at', 'credit-limit', 'refill', 'rate-limit', 'permissions'];

const COMMANDS: Record<string, { required: string[]; optional: string[] }> = {
  'account create': { required: ['name'], optional: ['credits'] },
  'credits grant': { required: ['account', 'amount'], optional: [] },
  'key create': { required: ['account', 'name'], optional: KEY_SETTING_OPTIONS },
  'key update': { required: ['id'], optional: KEY_SETTING_OPTIONS },
  'key roll': { required: ['id'], optional: ['grace'] },
  'key list': { required: ['account'], optional: [] },
  'key delete': { required: ['id'], optional: [] },
  'audit export': { required: ['account'], optional: [] },
  usage: { required: ['account'], optional: ['from', 'to'] },
  'user create': { required: ['account', 'email', 'password-stdin'], optional: [] },
  'user list': { required: ['account'], optional: [] },
  'user delete': { required: ['id'], optional: [] },
  'member add': { required: ['account', 'email', 'role'], optional: [] },
};

function parse(argv: readonly string[]): Parsed {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      name: { type: 'string' },
      credits: { type: 'string' },
      account: { type: 'string' },
      amount: { type: 'string' },
      id: { type: 'string' },
      from: { type: 'string' },
      to: { type: 'string' },
      email: { type: 'string' },
      role: { type: 'string' },
      'expires-at': { type: 'string' },
      'credit-limit': { type: 'string' },
      refill: { type: 'string' },
      'rate-limit': { type: 'string' },
      permissions: { type: 'string' },
      grace: { type: 'string' },
      // Never a password on the command line (shell history, ps): it comes on stdin.
      'password-stdin': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length === 0 || positionals[0] === 'help') return { command: 'help', values: {} };
  const command = positionals.slice(0, 2).join(' ');
  const spec = COMMANDS[command];
  if (!spec || positionals.length > 2) throw new Error(`unknown command "${positionals.join(' ')}"`);
  const given = values as Record<string, string | boolean | undefined>;
  for (const option of Object.keys(given)) {
    if (option !== 'help' && !spec.required.includes(option) && !spec.optional.includes(option)) throw new Error(`${command} does not take --${option}`);
  }
  for (const option of spec.required) {
    if (given[option] === undefined) throw new Error(`${command} needs --${option}`);
  }
  return { command, values: given as Record<string, string | undefined> };
}

async function execute({ command, values }: Parsed, services: AdminServices, io: CliIo): Promise<void> {
  const actor = cliActor();
  const print = async (value: unknown) => io.stdout(`${JSON.stringify(value)}\n`);
  switch (command) {
    case 'account create': {
      const credits = values.credits === undefined ? 0 : integer('credits', values.credits);
      const account = await services.credits.createAccount(values.name, credits, actor);
      return print({ accountId: account.id, name: account.name, credits: account.credits });
    }
    case 'credits grant': {
      const amount = integer('amount', values.amount!);
      const accountId = values.account!.trim().toLowerCase();
      const credits = await services.credits.grant(accountId, amount, `grant:${randomUUID()}`, actor);
      return print({ accountId, credits });
    }
    case 'key create': {
      const created = await services.keys.create(values.account!.trim().toLowerCase(), values.name, actor, keySettings(values));
      return print({ id: created.id, key: created.key, prefix: created.prefix, name: created.name, createdAt: created.createdAt });
    }
    case 'key update': {
      return print(await services.keys.update(values.id, keySettings(values), actor));
    }
    case 'key roll': {
      const rolled = await services.keys.roll(values.id, values.grace ?? '0', actor);
      return print({ id: rolled.id, key: rolled.key, prefix: rolled.prefix, oldKeyExpiresAt: rolled.oldKeyExpiresAt });
    }
    case 'key list': {
      return print(await services.keys.list(values.account!.trim().toLowerCase()));
    }
    case 'key delete': {
      const deleted = await services.keys.delete(values.id, actor);
      return print({ id: deleted.id, deletedAt: deleted.deletedAt });
    }
    case 'audit export': {
      for await (const entry of services.audit.exportForAccount(values.account!.trim())) await print(entry);
      return;
    }
    case 'user create': {
      const password = await (io.readLine ?? readStdinLine)();
      const user = await services.users.create(values.account, values.email, password, actor);
      return print({ userId: user.userId, email: user.email, accountId: user.accountId });
    }
    case 'user list': {
      const users = await services.users.list(values.account);
      return print(users.map((u) => ({ userId: u.userId, email: u.email, accountId: u.accountId, createdAt: u.createdAt })));
    }
    case 'user delete': {
      return print(await services.users.delete(values.id, actor));
    }
    case 'member add': {
      return print(await services.team.addByEmail(values.account, values.email, values.role, actor));
    }
    case 'usage': {
      const rows = await services.usage.forAccount(values.account, { from: values.from, to: values.to });
      return print(rows.map((r) => ({ ...r, day: r.day.toISOString().slice(0, 10) })));
    }
    default:
      throw new Error(`unknown command "${command}"`);
  }
}

/** The first line of standard input, without its line ending. */
async function readStdinLine(): Promise<string> {
  let text = '';
  for await (const chunk of process.stdin) {
    text += String(chunk);
    if (text.includes('\n')) break;
  }
  return text.split(/\r?\n/)[0] ?? '';
}

/** The key settings given as options; `never` / `none` clear one. The service checks the rules. */
function keySettings(values: Record<string, string | undefined>): KeySettingsInput {
  const settings: KeySettingsInput = {};
  const expires = values['expires-at']?.trim();
  if (expires !== undefined) settings.expiresAt = expires === 'never' ? null : expires;
  const limit = (option: string) => {
    const text = values[option]?.trim();
    if (text === undefined) return undefined;
    if (text === 'none') return null;
    if (!/^\d{1,15}$/.test(text)) throw new Error(`--${option} must be a positive integer or none, got "${text}"`);
    return Number(text);
  };
  if (values['credit-limit'] !== undefined) settings.creditLimit = limit('credit-limit');
  if (values['rate-limit'] !== undefined) settings.rateLimitPerMinute = limit('rate-limit');
  const refill = values.refill?.trim();
  if (refill !== undefined) settings.refill = refill === 'none' ? null : refill;
  const permissions = values.permissions?.trim();
  if (permissions !== undefined) settings.permissions = permissions === '' ? [] : permissions.split(',').map((p) => p.trim());
  return settings;
}

/** Strict: "10" yes; "10.5", "1e3", "-1", "" no (the service then names the rule). */
function integer(field: string, text: string): number {
  if (!/^\d{1,15}$/.test(text.trim())) throw new Error(`--${field} must be a non-negative integer, got "${text}"`);
  return Number(text.trim());
}

/** The CLI acts as the operating-system user on this machine; its IP is the machine's own address. */
export function cliActor(): AuditActor {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch {
    // no passwd entry (containers): keep "unknown"
  }
  return { actor: `cli:${user}`, ip: machineAddress(), host: hostname() };
}

function machineAddress(): string {
  const all = Object.values(networkInterfaces()).flatMap((list) => list ?? []);
  const external = all.find((a) => !a.internal && a.family === 'IPv4') ?? all.find((a) => !a.internal);
  return external?.address ?? '127.0.0.1';
}

function redact(uri: string): string {
  return uri.replace(/\/\/[^@/]*@/, '//***@');
}

/** The CLI as this process (`npm run cli`, the bin): exits with the command's code once its output is written. */
export async function runCliProcess(argv: readonly string[]): Promise<never> {
  const output = processOutput();
  const code = await runCli(argv, { stdout: output.stdout, stderr: output.stderr, env: process.env }).catch((err: unknown) => {
    output.stderr(`error: ${(err as Error)?.message ?? String(err)}\n`);
    return 1;
  });
  return output.exit(code);
}

const invokedDirectly = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1]);
if (invokedDirectly) void runCliProcess(process.argv.slice(2));
