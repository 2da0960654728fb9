// The console's Webhooks page over HTTP: add (secret shown once), list, delete with confirmation,
// recent deliveries with Resend (same webhook-id, checked by a real receiver), the credits.low threshold.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startConfiguredImageWorker, type RunningWorker } from '../../workers/image-worker.js';
import { startTestApp, type TestApp } from '../helpers/app.js';
import { consoleGet, consolePost, createConsoleUser, sameOrigin, signIn, type ConsoleUser } from '../helpers/console.js';
import { until } from '../helpers/until.js';
import { startReceiver, type Receiver } from '../webhooks/receiver.js';

let t: TestApp;
let worker: RunningWorker;
let receiver: Receiver;
let user: ConsoleUser;
let cookie: string;

beforeAll(async () => {
  t = await startTestApp({ IN_PROCESS_WORKER: 'false', WEBHOOK_ALLOW_PRIVATE_URLS: 'true', WEBHOOK_RETRY_SCHEDULE: '200ms' });
  worker = await startConfiguredImageWorker(t.config, t.services.imageJobs, { info() {}, warn() {}, error() {} });
  receiver = await startReceiver();
  user = await createConsoleUser(t, { credits: 100 });
  cookie = (await signIn(t, user.email, user.password)).cookie!;
});

afterAll(async () => {
  await worker?.stop(5_000);
  await t?.close();
  await receiver?.close();
});

/** A form post with repeated fields (one `events` per ticked box), as a browser sends it. */
function postForm(path: string, fields: [string, string][]): Promise<Response> {
  return fetch(`${t.baseUrl}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, ...sameOrigin(t) },
    body: new URLSearchParams(fields),
  });
}

describe('Webhooks page', () => {
  it('is in the navigation, has the form with accessible names, and no inline script or style', async () => {
    const res = await consoleGet(t, '/console/webhooks', cookie);
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('<a href="/console/webhooks" aria-current="page">Webhooks</a>');
    expect(page).toContain('<label for="webhook-url">URL</label>');
    expect(page).toContain('<legend>Events</legend>');
    const types = ['job.completed', 'job.failed', 'job.canceled', 'credits.low', 'key.expiring', 'credits.recharge_failed'];
    for (const type of types) expect(page).toContain(`name="events" value="${type}" checked`);
    // The intro names the same events as the form.
    const intro = /<p class="lead">([\s\S]*?)<\/p>/.exec(page)?.[1] ?? '';
    expect([...intro.matchAll(/<code>([^<]+)<\/code>/g)].map((m) => m[1])).toEqual(types);
    expect(page).toContain('<button type="submit">Add endpoint</button>');
    expect(page).toContain('<label for="low-threshold">Low-balance threshold</label>');
    expect(page).toMatch(/id="low-threshold"[^>]*value="10"/);
    expect(page).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(page).not.toMatch(/\sstyle=/);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    // Other pages link to it too.
    expect(await (await consoleGet(t, '/console/keys', cookie)).text()).toContain('<a href="/console/webhooks">Webhooks</a>');
  });

  it('adds an endpoint and shows its secret once, with a Copy button', async () => {
    const res = await postForm('/console/webhooks', [
      ['url', receiver.url],
      ['events', 'job.completed'],
      ['events', 'credits.low'],
    ]);
    expect(res.status).toBe(201);
    const page = await res.text();
    const secret = /<code id="new-secret">(whsec_[^<]+)<\/code>/.exec(page)?.[1];
    expect(secret).toMatch(/^whsec_/);
    expect(page).toContain('<button type="button" data-copy="#new-secret">Copy</button>');
    receiver.secret = secret;
    const again = await (await consoleGet(t, '/console/webhooks', cookie)).text();
    expect(again).not.toContain(secret!);
    expect(again).toContain(`<code>${receiver.url}</code>`);
    expect(again).toContain('job.completed, credits.low');
    const list = await (await fetch(`${t.baseUrl}/api/webhooks`, { headers: { authorization: `Bearer ${user.key}` } })).json();
    expect(list.webhooks.map((w: { events: string[] }) => w.events)).toEqual([['job.completed', 'credits.low']]);
  });

  it('a refused URL is a 400 page naming the rule, with the form kept', async () => {
    const res = await postForm('/console/webhooks', [['url', 'ftp://example.com/'], ['events', 'job.failed']]);
    expect(res.status).toBe(400);
    const page = await res.text();
    expect(page).toMatch(/<p class="error" role="alert">url must be an http or https URL<\/p>/);
    expect(page).toContain('value="ftp://example.com/"');
    expect(page).toContain('name="events" value="job.failed" checked');
    expect(page).not.toContain('name="events" value="job.completed" checked');
    const none = await postForm('/console/webhooks', [['url', receiver.url]]);
    expect(none.status).toBe(400);
    expect(await none.text()).toContain('events must be a non-empty array');
  });

  it('lists deliveries with their status; Resend sends the same event again with the same webhook-id', async () => {
    const res = await fetch(`${t.baseUrl}/api/playground/images`, {
      method: 'POST',
      headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompts: ['for the console'] }),
    });
    expect(res.status).toBe(201);
    await until(() => receiver.received.length >= 1);
    expect(receiver.received[0].verified).toBe(true);
    let page = '';
    await until(async () => (page = await (await consoleGet(t, '/console/webhooks', cookie)).text()).includes('>succeeded</span>'));
    expect(page).toContain('1: HTTP 204');
    const deliveryId = /action="\/console\/webhooks\/deliveries\/(dlv_[^/]+)\/resend"/.exec(page)?.[1];
    expect(deliveryId).toBeDefined();
    expect(page).toMatch(/aria-label="Resend job.completed msg_[^"]+">Resend<\/button>/);

    const resend = await consolePost(t, `/console/webhooks/deliveries/${deliveryId}/resend`, cookie, {});
    expect(resend.status).toBe(303);
    await until(() => receiver.received.length >= 2);
    expect(receiver.received[1].verified).toBe(true);
    expect(receiver.received[1].id).toBe(receiver.received[0].id);
    expect(receiver.received[1].body).toEqual(receiver.received[0].body);
    // A foreign or unknown delivery: 404.
    expect((await consolePost(t, '/console/webhooks/deliveries/dlv_unknown00000/resend', cookie, {})).status).toBe(404);
  });

  it('sets the credits.low threshold; a bad value is a 400 naming the rule', async () => {
    const saved = await consolePost(t, '/console/webhooks/threshold', cookie, { threshold: '250' });
    expect(saved.status).toBe(303);
    expect(await (await consoleGet(t, '/console/webhooks', cookie)).text()).toMatch(/id="low-threshold"[^>]*value="250"/);
    expect(await t.services.webhooks.lowCreditsState(user.accountId)).toEqual({ threshold: 250, armed: false });
    for (const bad of ['abc', '-1', '1.5', '']) {
      const res = await consolePost(t, '/console/webhooks/threshold', cookie, { threshold: bad });
      expect(res.status, bad).toBe(400);
      expect(await res.text()).toContain('threshold must be a whole number');
    }
    await consolePost(t, '/console/webhooks/threshold', cookie, { threshold: '10' });
  });

  it('deletes an endpoint after a confirmation page', async () => {
    const page = await (await consoleGet(t, '/console/webhooks', cookie)).text();
    const id = /action="\/console\/webhooks\/(ep_[0-9a-f]+)\/delete"/.exec(page)?.[1];
    expect(id).toBeDefined();
    const confirm = await consoleGet(t, `/console/webhooks/${id}/delete`, cookie);
    expect(confirm.status).toBe(200);
    const text = await confirm.text();
    expect(text).toContain('role="dialog"');
    expect(text).toContain('<button type="submit" class="danger">Delete endpoint</button>');
    const deleted = await consolePost(t, `/console/webhooks/${id}/delete`, cookie, {});
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get('location')).toBe('/console/webhooks');
    expect(await (await consoleGet(t, '/console/webhooks', cookie)).text()).toContain('No endpoints yet.');
    expect((await consoleGet(t, `/console/webhooks/${id}/delete`, cookie)).status).toBe(404);
  });

  it('signed out: the page redirects to sign-in and actions are refused', async () => {
    expect((await consoleGet(t, '/console/webhooks', null)).status).toBe(303);
    const res = await consolePost(t, '/console/webhooks/threshold', null, { threshold: '5' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toMatch(/^\/console\/sign-in/);
    expect((await t.services.webhooks.lowCreditsState(user.accountId))?.threshold).toBe(10);
  });
});
