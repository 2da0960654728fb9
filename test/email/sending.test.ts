/**
 * Email as it really leaves the gateway: the SMTP sender against a real SMTP server on loopback, the
 * log used without SMTP_URL, and the start-up refusal in production.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, checkGatewayConfig, loadConfig } from '../../src/config.js';
import { composeEmail, tokenLink } from '../../src/domain/email/compose.js';
import { createEmailSender } from '../../src/providers/email/index.js';
import { SmtpEmailSender } from '../../src/providers/email/smtp.js';
import { startSmtpServer, type TestSmtpServer } from '../helpers/smtp.js';

describe('SMTP sender', () => {
  let smtp: TestSmtpServer;
  let sender: SmtpEmailSender;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    sender = new SmtpEmailSender(smtp.url, 'Gateway <no-reply@example.com>');
  });
  afterAll(async () => {
    sender.close();
    await smtp.close();
  });

  it('delivers a text and an HTML body, authenticating with the credentials in SMTP_URL', async () => {
    const link = tokenLink('https://gw.example.com/', '/console/verify-email', 'abc_123');
    await sender.send(composeEmail({ to: 'Ada@Example.com', subject: 'Confirm <your> email', intro: ['Hello & welcome, <b>Ada</b>.'], action: { label: 'Confirm', url: link } }));
    const mail = await smtp.nextMessage('ada@example.com');
    expect(mail.fromHeader).toMatch(/^"?Gateway"? <no-reply@example.com>$/);
    expect(mail.from).toBe('no-reply@example.com');
    expect(mail.user).toBe('test');
    expect(mail.subject).toBe('Confirm <your> email');
    expect(mail.text).toContain('Hello & welcome, <b>Ada</b>.');
    expect(mail.links).toEqual(['https://gw.example.com/console/verify-email?token=abc_123']);
    expect(mail.html).toContain('Hello &amp; welcome, &lt;b&gt;Ada&lt;/b&gt;.');
    expect(mail.html).not.toContain('<b>Ada</b>');
    expect(mail.html).toContain('href="https://gw.example.com/console/verify-email?token=abc_123"');
  });

  it('rejects when the SMTP server cannot be reached', async () => {
    const closed = await startSmtpServer();
    await closed.close();
    const unreachable = new SmtpEmailSender(closed.url, 'no-reply@example.com');
    await expect(unreachable.send(composeEmail({ to: 'x@example.com', subject: 's', intro: ['t'] }))).rejects.toThrow();
    unreachable.close();
  });
});

describe('without SMTP_URL', () => {
  it('development writes recipient, subject and the text with its full links to the log', async () => {
    const lines: string[] = [];
    const sender = createEmailSender(loadConfig({ NODE_ENV: 'development' }), (t) => lines.push(t));
    await sender.send(composeEmail({ to: 'bo@example.com', subject: 'Reset your password', intro: ['Someone asked.'], action: { label: 'Reset', url: 'http://localhost:4000/console/reset-password?token=t' } }));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('To: bo@example.com');
    expect(lines[0]).toContain('Subject: Reset your password');
    expect(lines[0]).toContain('http://localhost:4000/console/reset-password?token=t');
  });

  it('production refuses to start, naming SMTP_URL', () => {
    const config = loadConfig({ NODE_ENV: 'production', PUBLIC_BASE_URL: 'https://gw.example.com' });
    expect(() => checkGatewayConfig(config)).toThrow(ConfigError);
    expect(() => checkGatewayConfig(config)).toThrow(/SMTP_URL: is required when NODE_ENV=production/);
    const complete = { NODE_ENV: 'production', PUBLIC_BASE_URL: 'https://gw.example.com', MONGODB_URI: 'mongodb://db.example/gateway', SMTP_URL: 'smtps://u:p@mail.example.com' };
    expect(() => checkGatewayConfig(loadConfig(complete))).not.toThrow();
  });

  it('SMTP_URL must be smtp:// or smtps://', () => {
    expect(() => loadConfig({ SMTP_URL: 'http://mail.example.com' })).toThrow(/SMTP_URL: must be an smtp:\/\/ or smtps:\/\/ URL/);
  });
});
