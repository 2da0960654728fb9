import { createTransport } from 'nodemailer';
import type { EmailMessage, EmailSender } from '../../domain/email/ports.js';

/**
 * Email over SMTP (nodemailer): `smtp://user:pass@host:587` (STARTTLS when the server offers it) or
 * `smtps://…:465` (TLS from the start). Resolves when the server has accepted the message.
 */
export class SmtpEmailSender implements EmailSender {
  private readonly transport: ReturnType<typeof createTransport>;

  constructor(smtpUrl: string, private readonly from: string) {
    // A pool: the connection stays open between emails instead of a handshake per message.
    this.transport = createTransport({ url: smtpUrl, pool: true, maxConnections: 3, connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 });
  }

  async send(message: EmailMessage): Promise<void> {
    await this.transport.sendMail({ from: this.from, to: message.to, subject: message.subject, text: message.text, html: message.html });
  }

  close(): void {
    this.transport.close();
  }
}
