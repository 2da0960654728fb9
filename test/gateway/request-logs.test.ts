/**
 * Request log lines keep the path and never the secret of a signed image URL (`sig`), whatever its
 * spelling in the query string.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImageUrlSigner } from '../../src/domain/jobs/signed-urls.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const SECRET = 'a request-log test signing secret, 32+ chars';
const lines: string[] = [];
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ LOG_LEVEL: 'info', URL_SIGNING_SECRET: SECRET, logStream: { write: (line: string) => lines.push(line) } });
});
afterAll(async () => {
  await t?.close();
});

/** The `url` of the app's "incoming request" lines. */
const loggedUrls = () => lines.map((l) => JSON.parse(l) as { msg: string; req?: { url: string } }).filter((l) => l.msg === 'incoming request').map((l) => l.req!.url);

describe('request logs', () => {
  it("a signed image URL's sig is redacted; the path and expiry stay", async () => {
    const jobId = randomUUID();
    const path = new ImageUrlSigner(SECRET, 3600).path(jobId, 0);
    const sig = new URL(path, 'http://x').searchParams.get('sig')!;
    const expires = new URL(path, 'http://x').searchParams.get('expires')!;
    // A valid signature of a job that does not exist: verified, then not found.
    const res = await fetch(`${t.baseUrl}${path}`);
    expect(res.status).toBe(404);
    expect(lines.join('\n')).not.toContain(sig);
    expect(loggedUrls()).toContain(`/api/playground/images/${jobId}/images/0?expires=${expires}&sig=[redacted]`);
  });

  it('every spelling of sig is redacted (percent-encoded name, repeated, upper case); other parameters stay', async () => {
    const secret = randomUUID().replace(/-/g, '');
    for (const query of [`%73ig=${secret}`, `SIG=${secret}`, `expires=1&sig=a&sig=${secret}#x`, `a=1&s%69g=${secret}&b=2`]) {
      await fetch(`${t.baseUrl}/api/playground/images/${randomUUID()}/images/0?${query}`);
    }
    await fetch(`${t.baseUrl}/console/usage?from=2026-01-01&to=2026-01-31`);
    expect(lines.join('\n')).not.toContain(secret);
    const urls = loggedUrls();
    expect(urls.some((u) => u.endsWith('?a=1&s%69g=[redacted]&b=2'))).toBe(true);
    expect(urls).toContain('/console/usage?from=2026-01-01&to=2026-01-31');
  });
});
