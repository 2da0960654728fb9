/**
 * The console over HTTP: sign-in, sessions, cross-site refusal, throttling, the audit trail, and the
 * playground's real charges. Browser flows are in browser.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvRow } from '../../src/console/csv.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, consolePost, createConsoleUser, sameOrigin, signIn } from '../helpers/console.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ TRUST_PROXY: '1' });
});
afterAll(async () => {
  await t?.close();
});

async function auditEvents(accountId: string) {
  const out = [];
  for await (const e of t.services.audit.exportForAccount(accountId)) out.push(e);
  return out;
}

const csrfOf = (page: string) => /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';

describe('sign-in', () => {
  it('signs in with the right password: a session cookie HttpOnly, SameSite=Strict, Path=/, no Secure over http', async () => {
    const u = await createConsoleUser(t);
    const res = await signIn(t, u.email, u.password);
    expect(res.status).toBe(303);
    expect(res.res.headers.get('location')).toBe('/console');
    expect(res.setCookie).toMatch(/^console_session=[\w-]{43}; Path=\/; HttpOnly; SameSite=Strict$/);
    const overview = await consoleGet(t, '/console', res.cookie);
    expect(overview.status).toBe(200);
    expect(await overview.text()).toContain('Credit balance');
  });

  it('over HTTPS (behind a trusted proxy) the cookie is __Host- prefixed and Secure', async () => {
    const u = await createConsoleUser(t);
    const res = await signIn(t, u.email, u.password, { 'x-forwarded-proto': 'https', origin: t.baseUrl.replace('http:', 'https:') });
    expect(res.status).toBe(303);
    expect(res.setCookie).toMatch(/^__Host-console_session=[\w-]{43}; Path=\/; HttpOnly; Secure; SameSite=Strict$/);
  });

  it('the same text for a wrong password and an unknown email; the password never reaches the audit trail', async () => {
    const u = await createConsoleUser(t);
    const wrong = await signIn(t, u.email, 'not the password at all');
    const unknown = await signIn(t, 'nobody-here@example.com', 'not the password at all');
    for (const r of [wrong, unknown]) {
      expect(r.status).toBe(401);
      expect(r.text).toContain('Invalid email or password');
      expect(r.cookie).toBeNull();
    }
    const entries = await auditEvents(u.accountId);
    const failed = entries.find((e) => e.event === 'console.sign_in_failed');
    expect(failed).toMatchObject({ ip: expect.stringMatching(/127\.0\.0\.1/), actor: `console:${u.email}` });
    expect(failed?.userAgent).toBeTruthy();
    expect(JSON.stringify(entries)).not.toContain('not the password at all');
  });

  it('a new session id at every sign-in; the previous session of that browser ends', async () => {
    const u = await createConsoleUser(t);
    const first = await signIn(t, u.email, u.password);
    const second = await signIn(t, u.email, u.password, { cookie: first.cookie! });
    expect(second.cookie).not.toBe(first.cookie);
    expect((await consoleGet(t, '/console', first.cookie)).status).toBe(303);
    expect((await consoleGet(t, '/console', second.cookie)).status).toBe(200);
  });

  it('follows next to a console page only; a wrong password keeps it on the form', async () => {
    const u = await createConsoleUser(t);
    const wrong = await consolePost(t, '/console/sign-in', null, { email: u.email, password: 'not the password at all', next: '/console/keys' });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('<input type="hidden" name="next" value="/console/keys">');
    expect((await consolePost(t, '/console/sign-in', null, { email: u.email, password: u.password, next: '/console/keys' })).headers.get('location')).toBe('/console/keys');
    for (const next of ['https://evil.example/console', '//evil.example', '/console//evil.example', '/console/../api/me', '/console/./keys', '/api/me']) {
      const res = await consolePost(t, '/console/sign-in', null, { email: u.email, password: u.password, next });
      expect(res.headers.get('location'), next).toBe('/console');
    }
  });

  it('judges next after decoding it until it is stable: encoded dot segments and slashes land on the Overview', async () => {
    const u = await createConsoleUser(t);
    const refused = [
      '/console/%2e%2e/%2e%2e/docs',
      '/console/%2E%2E/api/me',
      '/console/.%2e/api/me',
      '/console/%252e%252e/%252e%252e/docs',
      '/console/%25252e%25252e/docs',
      '/console/%2e/keys',
      '/console/%2f%2fevil.example',
      '/console/%5cevil.example',
      '/console/keys%3f/../../docs',
      '/console/%zz',
    ];
    for (const next of refused) {
      const res = await consolePost(t, '/console/sign-in', null, { email: u.email, password: u.password, next });
      expect(res.headers.get('location'), next).toBe('/console');
    }
    // Encoded characters that decode to nothing dangerous are followed as given.
    for (const next of ['/console/usage?from=2026-01-01&to=2026-01-31', '/console/invitations/accept?token=abc_DEF-123', '/console/audit?event=key%2Ecreated']) {
      const res = await consolePost(t, '/console/sign-in', null, { email: u.email, password: u.password, next });
      expect(res.headers.get('location'), next).toBe(next);
    }
  });

  it('after 5 failures for one email, further attempts get 429 with Retry-After, even with the right password', async () => {
    const u = await createConsoleUser(t);
    for (let i = 0; i < 5; i++) expect((await signIn(t, u.email, `wrong password ${i}`)).status).toBe(401);
    const locked = await signIn(t, u.email, u.password);
    expect(locked.status).toBe(429);
    expect(Number(locked.res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(locked.text).toContain('Too many attempts');
    expect(locked.cookie).toBeNull();
    // Another email from the same address is not locked by it.
    const other = await createConsoleUser(t);
    expect((await signIn(t, other.email, other.password)).status).toBe(303);
  });

  it('many failures from one IP address lock that address for every email', async () => {
    const ip = '198.51.100.7';
    for (let i = 0; i < 30; i++) await signIn(t, `spray-${i}@example.com`, 'a wrong password!', { 'x-forwarded-for': ip });
    const u = await createConsoleUser(t);
    const locked = await signIn(t, u.email, u.password, { 'x-forwarded-for': ip });
    expect(locked.status).toBe(429);
    expect((await signIn(t, u.email, u.password, { 'x-forwarded-for': '198.51.100.8' })).status).toBe(303);
  });
});

describe('sessions', () => {
  it('sign-out deletes the session on the server: the old cookie no longer works', async () => {
    const u = await createConsoleUser(t);
    const { cookie } = await signIn(t, u.email, u.password);
    const out = await consolePost(t, '/console/sign-out', cookie, {});
    expect(out.status).toBe(303);
    expect(out.headers.getSetCookie().join()).toMatch(/console_session=; Max-Age=0/);
    expect((await consoleGet(t, '/console/keys', cookie)).status).toBe(303);
    expect((await auditEvents(u.accountId)).map((e) => e.event)).toContain('console.signed_out');
  });

  it('an expired session is refused (idle or absolute limit reached)', async () => {
    const u = await createConsoleUser(t);
    const { cookie } = await signIn(t, u.email, u.password);
    await t.connection.db!.collection('console_sessions').updateMany({ email: u.email }, { $set: { expiresAt: new Date(Date.now() - 1000) } });
    const res = await consoleGet(t, '/console/keys', cookie);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/sign-in?next=%2Fconsole%2Fkeys');
  });

  it('stores only a hash of the session token, with a TTL index on its expiry', async () => {
    const u = await createConsoleUser(t);
    const { cookie } = await signIn(t, u.email, u.password);
    const token = cookie!.split('=')[1]!;
    const stored = await t.connection.db!.collection('console_sessions').findOne({ email: u.email });
    expect(stored?._id).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(stored)).not.toContain(token);
    const indexes = await t.connection.db!.collection('console_sessions').indexes();
    expect(indexes.find((i) => i.key.expiresAt === 1)?.expireAfterSeconds).toBe(0);
  });

  it('a user sees their sessions and ends the others', async () => {
    const u = await createConsoleUser(t);
    const a = await signIn(t, u.email, u.password);
    const b = await signIn(t, u.email, u.password);
    const page = await (await consoleGet(t, '/console/sessions', a.cookie)).text();
    expect(page).toContain('This session');
    expect(page.match(/End session/g)).toHaveLength(1);
    const res = await consolePost(t, '/console/sessions/end-others', a.cookie, {});
    expect(res.status).toBe(303);
    expect((await consoleGet(t, '/console', b.cookie)).status).toBe(303);
    expect((await consoleGet(t, '/console', a.cookie)).status).toBe(200);
    expect((await auditEvents(u.accountId)).find((e) => e.event === 'console.session_ended')?.ip).toMatch(/127\.0\.0\.1/);
  });
});

describe('cross-site requests', () => {
  it('are refused with 403 and change nothing', async () => {
    const u = await createConsoleUser(t);
    const { cookie } = await signIn(t, u.email, u.password);
    const before = (await t.services.keys.list(u.accountId)).length;
    const attempts: Record<string, string>[] = [
      { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
      { 'sec-fetch-site': 'same-site', origin: 'http://sub.127.0.0.1' },
      { origin: 'https://evil.example' },
      {},
    ];
    for (const headers of attempts) {
      const res = await consolePost(t, '/console/keys', cookie, { name: 'stolen' }, headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      expect(await res.text()).toContain('Cross-site request refused');
    }
    const del = await consolePost(t, `/console/keys/${u.keyId}/delete`, cookie, {}, { 'sec-fetch-site': 'cross-site' });
    expect(del.status).toBe(403);
    expect(await t.services.keys.list(u.accountId)).toHaveLength(before);
    expect(await t.services.authenticator.isActive(u.keyId)).toBe(true);
  });

  it('a client that sends neither Sec-Fetch-Site nor Origin may post with its synchronizer token', async () => {
    const u = await createConsoleUser(t);
    const { cookie } = await signIn(t, u.email, u.password);
    const token = csrfOf(await (await consoleGet(t, '/console/keys', cookie)).text());
    expect(token).not.toBe('');
    const res = await consolePost(t, '/console/keys', cookie, { name: 'scripted', _csrf: token }, {});
    expect(res.status).toBe(201);
    expect((await t.services.keys.list(u.accountId)).map((k) => k.name)).toContain('scripted');
  });
});

describe('API keys in the console', () => {
  it('Create Key shows the key once; it works on REST; Delete revokes it at once; both audited with the IP', async () => {
    const u = await createConsoleUser(t, { credits: 5 });
    const { cookie } = await signIn(t, u.email, u.password);
    const created = await consolePost(t, '/console/keys', cookie, { name: 'ci runner' }, { ...sameOrigin(t), accept: 'application/json' });
    expect(created.status).toBe(201);
    const body = (await created.json()) as { id: string; key: string; prefix: string };
    expect(body.key).toMatch(/^wi_live_[0-9a-f]{64}$/);
    expect(body.prefix).toBe(body.key.slice(0, 12));
    const list = await (await consoleGet(t, '/console/keys', cookie)).text();
    expect(list).toContain('ci runner');
    expect(list).toContain(body.prefix);
    expect(list).not.toContain(body.key);
    const call = () =>
      fetch(`${t.baseUrl}/api/playground/query`, { method: 'POST', headers: { authorization: `Bearer ${body.key}`, 'content-type': 'application/json' }, body: '{"keyword":"tree"}' });
    expect((await call()).status).toBe(200);
    const del = await consolePost(t, `/console/keys/${body.id}/delete`, cookie, {});
    expect(del.status).toBe(303);
    expect((await call()).status).toBe(401);
    expect(await (await consoleGet(t, '/console/keys', cookie)).text()).not.toContain('ci runner');
    const entries = await auditEvents(u.accountId);
    for (const event of ['key.created', 'key.deleted']) {
      expect(entries.find((e) => e.event === event && e.keyId === body.id), event).toMatchObject({ ip: expect.stringMatching(/127\.0\.0\.1/), actor: `console:${u.email}` });
    }
  });

  it("cannot delete another account's key", async () => {
    const u = await createConsoleUser(t);
    const other = await createConsoleUser(t);
    const { cookie } = await signIn(t, u.email, u.password);
    const res = await consolePost(t, `/console/keys/${other.keyId}/delete`, cookie, {});
    expect(res.status).toBe(400);
    expect(await t.services.authenticator.isActive(other.keyId)).toBe(true);
  });

  it('an empty name is refused with the rule, and nothing is created', async () => {
    const u = await createConsoleUser(t);
    const { cookie } = await signIn(t, u.email, u.password);
    const res = await consolePost(t, '/console/keys', cookie, { name: '   ' });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('name must not be empty');
    expect(await t.services.keys.list(u.accountId)).toHaveLength(1);
  });
});

describe('audit log and usage exports', () => {
  it('export the filtered range as JSON lines and CSV; spreadsheet formulas in data are neutralised', async () => {
    const u = await createConsoleUser(t);
    const { cookie } = await signIn(t, u.email, u.password);
    await consolePost(t, '/console/keys', cookie, { name: '=HYPERLINK("http://evil.example")' });
    const today = new Date().toISOString().slice(0, 10);
    const jsonl = await consoleGet(t, `/console/audit.jsonl?event=key.created&from=${today}&to=${today}`, cookie);
    expect(jsonl.status).toBe(200);
    expect(jsonl.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = (await jsonl.text()).trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(new Set(lines.map((l) => l.event))).toEqual(new Set(['key.created']));
    expect(lines.every((l) => l.accountId === u.accountId)).toBe(true);
    const csv = await (await consoleGet(t, `/console/audit.csv?event=key.created`, cookie)).text();
    expect(csv.split('\r\n')[0]).toBe('time,event,event_label,actor,ip,details,key_id');
    expect(csv).toContain('key.created');
    expect(csv).not.toMatch(/(^|,)=HYPERLINK/m);
    // Cells a spreadsheet would run as formulas start with a quote; commas and quotes are escaped.
    expect(csvRow(['=1+1', '+x', '-y', '@z', 'a,b', 'q"q', 7])).toBe(`'=1+1,'+x,'-y,'@z,"a,b","q""q",7\r\n`);
    const none = await consoleGet(t, `/console/audit.jsonl?from=2020-01-01&to=2020-01-02`, cookie);
    expect(await none.text()).toBe('');
    const bad = await consoleGet(t, `/console/audit?event=nope`, cookie);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('event must be one of');
  });

  it('usage as CSV, per day, service and key', async () => {
    const u = await createConsoleUser(t);
    await fetch(`${t.baseUrl}/api/playground/query`, { method: 'POST', headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/json' }, body: '{"keyword":"oak"}' });
    const { cookie } = await signIn(t, u.email, u.password);
    const csv = await (await consoleGet(t, '/console/usage.csv', cookie)).text();
    const [header, row] = csv.trim().split('\r\n');
    expect(header).toBe('day,service,source,key,calls,credits,refunded');
    expect(row).toBe(`${new Date().toISOString().slice(0, 10)},definitions,${u.keyId},test key (${u.key.slice(0, 12)}…),1,1,0`);
  });
});

describe('playground', () => {
  it('offers Size, Format and Seed, and starts the job with them; a refused option is shown and charges nothing', async () => {
    const u = await createConsoleUser(t, { credits: 3 });
    const { cookie } = await signIn(t, u.email, u.password);
    const page = await (await consoleGet(t, '/console/playground', cookie)).text();
    expect(page).toMatch(/<label for="size">Size<\/label>\s*<select id="size" name="size"><option value="256x256" selected>256x256<\/option>/);
    expect(page).toContain('<option value="512x512">512x512</option>');
    expect(page).toMatch(/<select id="format" name="format"><option value="png" selected>PNG<\/option><option value="webp">WebP<\/option><option value="jpeg">JPEG<\/option>/);
    expect(page).toMatch(/<label for="seed">Seed<\/label>\s*<input id="seed" name="seed"/);

    const json = { ...sameOrigin(t), accept: 'application/json' };
    const created = await consolePost(t, '/console/playground/generate', cookie, { prompts: 'a moth', size: '512x512', format: 'webp', seed: '77' }, json);
    expect(created.status).toBe(201);
    const job = await t.services.jobs.get({ accountId: u.accountId, keyId: null, userId: 'test' } as never, (await created.json()).jobId, { baseUrl: t.baseUrl });
    expect(job.options).toEqual({ size: '512x512', format: 'webp', seed: 77, negativePrompt: null });

    const refused = await consolePost(t, '/console/playground/generate', cookie, { prompts: 'a moth', size: '300x300', seed: 'abc' });
    expect(refused.status).toBe(400);
    const html = await refused.text();
    expect(html).toContain('Size must be one of 256x256, 512x512');
    expect(html).toContain('value="abc"');
    expect((await t.services.credits.getAccount(u.accountId))!.credits).toBe(2);
  });

  it('charges for real, as the signed-in user: usage and the audit trail say "console"', async () => {
    const u = await createConsoleUser(t, { credits: 3 });
    const { cookie } = await signIn(t, u.email, u.password);
    const json = { ...sameOrigin(t), accept: 'application/json' };
    const looked = await consolePost(t, '/console/playground/lookup', cookie, { keyword: ' dog ' }, json);
    expect(looked.status).toBe(200);
    expect(await looked.json()).toMatchObject({ keyword: 'dog', credits: 2 });
    const generated = await consolePost(t, '/console/playground/generate', cookie, { prompts: 'a cat\n\na dog\n' }, json);
    expect(generated.status).toBe(201);
    expect(await generated.json()).toMatchObject({ totalImages: 2, creditsUsed: 2, credits: 0 });
    const broke = await consolePost(t, '/console/playground/lookup', cookie, { keyword: 'dog' }, json);
    expect(broke.status).toBe(402);
    expect(await broke.json()).toMatchObject({ error: 'Insufficient credits', code: 'insufficient_credits' });
    const rows = await t.services.usage.forAccount(u.accountId);
    expect(rows.filter((r) => r.source === 'console').map((r) => [r.service, r.calls, r.credits])).toEqual(
      expect.arrayContaining([
        ['definitions', 1, 1],
        ['images', 1, 2],
      ]),
    );
  });
});

describe('doors stay apart', () => {
  it('a console session never authenticates an API request', async () => {
    const u = await createConsoleUser(t);
    const { cookie } = await signIn(t, u.email, u.password);
    const rest = await fetch(`${t.baseUrl}/api/playground/query`, { method: 'POST', headers: { cookie: cookie!, 'content-type': 'application/json' }, body: '{"keyword":"x"}' });
    expect(rest.status).toBe(401);
    const gql = await fetch(`${t.baseUrl}/graphql`, { method: 'POST', headers: { cookie: cookie!, 'content-type': 'application/json' }, body: '{"query":"{ me { credits } }"}' });
    expect(gql.status).toBe(401);
  });

  it('an API key never opens a console page', async () => {
    const u = await createConsoleUser(t);
    for (const path of ['/console', '/console/keys', '/console/audit']) {
      const res = await consoleGet(t, path, null, { authorization: `Bearer ${u.key}` });
      expect(res.status, path).toBe(303);
      expect(res.headers.get('location')).toMatch(/^\/console\/sign-in/);
    }
    const post = await fetch(`${t.baseUrl}/console/keys`, {
      method: 'POST',
      headers: { authorization: `Bearer ${u.key}`, accept: 'application/json', 'content-type': 'application/json', ...sameOrigin(t) },
      body: '{"name":"x"}',
    });
    expect(post.status).toBe(401);
    expect(await post.json()).toMatchObject({ code: 'not_signed_in' });
  });

  it('no API-key door creates, lists or deletes keys', async () => {
    const u = await createConsoleUser(t);
    for (const [method, path] of [
      ['POST', '/api/keys'],
      ['GET', '/api/keys'],
      ['DELETE', `/api/keys/${u.keyId}`],
      ['POST', '/api/playground/keys'],
    ] as const) {
      const res = await fetch(`${t.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${u.key}` } });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    const gql = await fetch(`${t.baseUrl}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${u.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ __schema { mutationType { fields { name } } } }' }),
    });
    const names = ((await gql.json()) as any).data.__schema.mutationType.fields.map((f: { name: string }) => f.name);
    // The charging operations, canceling a job, and minting client tokens (which never creates, lists or deletes a key).
    expect(names.sort()).toEqual(['cancelJob', 'createClientToken', 'generate', 'lookup']);
    expect(names.some((n: string) => /key/i.test(n))).toBe(false);
  });
});

describe('jobs page: Cancel', () => {
  // No worker runs in this file: a job stays queued until the test moves it.
  const createJob = async (key: string, prompts: string[]) => {
    const res = await fetch(`${t.baseUrl}/api/playground/images`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ prompts }) });
    return ((await res.json()) as { jobId: string }).jobId;
  };
  const cancelForm = (jobId: string) => new RegExp(`<form method="post" action="/console/jobs/${jobId}/cancel"[^>]*>\\s*<input type="hidden" name="_csrf" value="[^"]+">\\s*<button type="submit"[^>]*>Cancel</button>`);

  it('an unfinished job has a Cancel button; it cancels through the same service, refunds, and shows the result', async () => {
    const u = await createConsoleUser(t, { credits: 10 });
    const { cookie } = await signIn(t, u.email, u.password);
    const jobId = await createJob(u.key, ['a', 'b', 'c']);
    const page = await (await consoleGet(t, '/console/jobs', cookie)).text();
    expect(page).toMatch(cancelForm(jobId));

    const res = await consolePost(t, `/console/jobs/${jobId}/cancel`, cookie, { _csrf: csrfOf(page) });
    expect(res.status).toBe(200);
    const after = await res.text();
    expect(after).toContain(`Job <code>${jobId.slice(0, 8)}</code> canceled. 3 credits refunded.`);
    expect(after).toContain('<span class="badge canceled">canceled</span>');
    expect(after).not.toMatch(cancelForm(jobId));
    expect((await t.services.credits.getAccount(u.accountId))!.credits).toBe(10);
    // Again (a second tab, a double click): the same answer, nothing refunded twice.
    expect((await consolePost(t, `/console/jobs/${jobId}/cancel`, cookie, { _csrf: csrfOf(page) })).status).toBe(200);
    expect((await t.services.credits.getAccount(u.accountId))!.credits).toBe(10);
    // JSON clients get the job.
    const json = await consolePost(t, `/console/jobs/${jobId}/cancel`, cookie, {}, { ...sameOrigin(t), accept: 'application/json' });
    expect(await json.json()).toMatchObject({ jobId, status: 'canceled', creditsRefunded: 3 });
  });

  it('a finished job: 409 with the reason on the page; another account’s job: 404', async () => {
    const u = await createConsoleUser(t);
    const other = await createConsoleUser(t);
    const { cookie } = await signIn(t, u.email, u.password);
    const jobId = await createJob(u.key, ['a']);
    await t.services.imageJobs.runner.run(jobId, 0);
    const finished = await consolePost(t, `/console/jobs/${jobId}/cancel`, cookie, {});
    expect(finished.status).toBe(409);
    expect(await finished.text()).toContain('Job already finished (completed or failed): nothing to cancel');
    const foreign = await createJob(other.key, ['theirs']);
    expect((await consolePost(t, `/console/jobs/${foreign}/cancel`, cookie, {})).status).toBe(404);
    expect((await t.services.jobs.get({ accountId: other.accountId, keyId: other.keyId }, foreign, { baseUrl: t.baseUrl })).status).toBe('queued');
  });

  it('same-origin rules of every console form: a cross-site post is refused, a post without either header needs the form token', async () => {
    const u = await createConsoleUser(t);
    const { cookie } = await signIn(t, u.email, u.password);
    const jobId = await createJob(u.key, ['a']);
    const crossSite = await consolePost(t, `/console/jobs/${jobId}/cancel`, cookie, {}, { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' });
    expect(crossSite.status).toBe(403);
    expect((await consolePost(t, `/console/jobs/${jobId}/cancel`, cookie, {}, {})).status).toBe(403);
    expect((await t.services.jobs.get({ accountId: u.accountId, keyId: u.keyId }, jobId, { baseUrl: t.baseUrl })).status).toBe('queued');
    const page = await (await consoleGet(t, '/console/jobs', cookie)).text();
    expect((await consolePost(t, `/console/jobs/${jobId}/cancel`, cookie, { _csrf: csrfOf(page) }, {})).status).toBe(200);
  });
});

describe('nothing a client sends to the console yields a 500', () => {
  it('odd forms, methods, cookies and paths', async () => {
    const u = await createConsoleUser(t);
    const { cookie } = await signIn(t, u.email, u.password);
    const odd = ['', 'a'.repeat(5000), '%00', '{"x":1}', 'email[]=1&email[]=2', '\u0000\u0001', '__proto__[x]=1'];
    const paths = ['/console/sign-in', '/console/keys', '/console/keys/zz/delete', '/console/playground/lookup', '/console/playground/generate', '/console/sessions/zz/end', '/console/jobs/zz/cancel'];
    for (const path of paths) {
      for (const body of odd) {
        for (const c of [cookie, 'console_session=garbage', null]) {
          const res = await fetch(`${t.baseUrl}${path}`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', ...sameOrigin(t), ...(c ? { cookie: c } : {}) }, body });
          expect(res.status, `${path} ${JSON.stringify(body).slice(0, 30)}`).toBeLessThan(500);
        }
      }
    }
    for (const query of ['?from=bogus', '?from=2026-02-31', '?to=1999-01-01&from=2026-01-01', '?event=nope', '?after=%ff']) {
      for (const path of ['/console/usage', '/console/audit', '/console/jobs', '/console/usage.csv', '/console/audit.csv']) {
        const res = await consoleGet(t, `${path}${query}`, cookie);
        expect(res.status, `${path}${query}`).toBeLessThan(500);
      }
    }
    expect((await consoleGet(t, '/console/playground/jobs/not-a-job/events', cookie)).status).toBe(404);
  });
});
