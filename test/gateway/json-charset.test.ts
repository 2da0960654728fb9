/**
 * JSON bodies are read as UTF-8; a Content-Type naming another charset is refused with 415 in the
 * contract's shape (and nothing is charged), rather than read as UTF-8 and mangled.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestAccount, type TestApp } from '../helpers/app.js';

let t: TestApp;
let acc: TestAccount;
beforeAll(async () => {
  t = await startTestApp();
  acc = await t.createAccountWithKey({ credits: 100 });
});
afterAll(async () => {
  await t?.close();
});

const lookup = async (contentType: string, bytes: Buffer) => {
  const body = new Uint8Array(bytes);
  const res = await fetch(`${t.baseUrl}/api/playground/query`, { method: 'POST', headers: { authorization: `Bearer ${acc.key}`, 'content-type': contentType }, body });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};
const credits = async () => (await t.services.credits.getAccount(acc.accountId))!.credits;

describe('JSON body charset', () => {
  it.each([
    ['application/json; charset=utf-16', Buffer.from('\ufeff{"keyword":"café"}', 'utf16le')],
    ['application/json; charset=UTF-16LE', Buffer.from('{"keyword":"café"}', 'utf16le')],
    // Valid JSON either way: read as UTF-8 it would be charged for a mangled keyword ("caf\ufffd").
    ['application/json; charset=iso-8859-1', Buffer.from('{"keyword":"café"}', 'latin1')],
    ['application/json;charset="windows-1252"', Buffer.from('{"keyword":"café"}', 'latin1')],
  ])('%s → 415 unsupported_media_type, nothing charged', async (type, body) => {
    const before = await credits();
    const res = await lookup(type, body);
    expect(res).toEqual({ status: 415, body: { error: 'Content-Type must be application/json (charset utf-8)', code: 'unsupported_media_type', requestId: expect.any(String) } });
    expect(await credits()).toBe(before);
  });

  it.each(['application/json', 'application/json; charset=utf-8', 'Application/JSON; Charset="UTF-8"', 'application/json; charset=us-ascii'])('%s is read as UTF-8', async (type) => {
    const keyword = type.includes('ascii') ? 'cafe' : 'café';
    const res = await lookup(type, Buffer.from(JSON.stringify({ keyword }), 'utf8'));
    expect(res.status).toBe(200);
    expect(res.body.keyword).toBe(keyword);
  });

  it('GraphQL over HTTP: 415 with the same text', async () => {
    const res = await fetch(`${t.baseUrl}/graphql`, {
      method: 'POST',
      headers: { authorization: `Bearer ${acc.key}`, 'content-type': 'application/json; charset=utf-16' },
      body: new Uint8Array(Buffer.from('{"query":"{ me { credits } }"}', 'utf16le')),
    });
    expect(res.status).toBe(415);
    expect(await res.json()).toMatchObject({ errors: [{ message: 'Content-Type must be application/json (charset utf-8)', extensions: { code: 'BAD_USER_INPUT' } }] });
  });

  it('authentication still comes first: no key, a utf-16 body → 401', async () => {
    const res = await fetch(`${t.baseUrl}/api/playground/query`, { method: 'POST', headers: { 'content-type': 'application/json; charset=utf-16' }, body: new Uint8Array(Buffer.from('{}', 'utf16le')) });
    expect(res.status).toBe(401);
  });
});
