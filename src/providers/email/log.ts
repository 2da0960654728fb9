import type { EmailMessage, EmailSender } from '../../domain/email/ports.js';

/**
 * Development without SMTP_URL: every email is written to the gateway's output instead of being sent
 * (recipient, subject and the text body, whose links are written out in full). Never in production.
 */
export class LogEmailSender implements EmailSender {
  constructor(private readonly write: (text: string) => void) {}

  async send(message: EmailMessage): Promise<void> {
    const rule = '-'.repeat(72);
    this.write(`Email (SMTP_URL is not set: written here, not sent)\n${rule}\nTo: ${message.to}\nSubject: ${message.subject}\n\n${message.text}\n${rule}`);
  }
}
