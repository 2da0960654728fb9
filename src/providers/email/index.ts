import type { Config } from '../../config.js';
import type { EmailSender } from '../../domain/email/ports.js';
import { LogEmailSender } from './log.js';
import { SmtpEmailSender } from './smtp.js';

export interface ClosableEmailSender extends EmailSender {
  close?(): void;
}

/**
 * SMTP when SMTP_URL is set; otherwise the log (`write`), which production never gets
 * (checkGatewayConfig refuses to start without SMTP_URL there).
 */
export function createEmailSender(config: Pick<Config, 'SMTP_URL' | 'EMAIL_FROM' | 'NODE_ENV'>, write: (text: string) => void): ClosableEmailSender {
  if (config.SMTP_URL) return new SmtpEmailSender(config.SMTP_URL, config.EMAIL_FROM);
  if (config.NODE_ENV === 'production') throw new Error('SMTP_URL is required when NODE_ENV=production');
  return new LogEmailSender(write);
}
