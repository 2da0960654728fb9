import type { AuditActor, AuditStore } from '../audit/types.js';
import type { PasswordHasher } from '../console/passwords.js';
import type { ClientMeta } from '../console/sessions.js';
import type { EmailMessage, EmailSender } from '../email/ports.js';
import type { EmailThrottle } from '../email/throttle.js';
import { AppError } from '../errors.js';
import type { LinkTokens } from '../links/service.js';

/** What every service that emails a link needs: the links, the sender, the throttle, the hasher and the audit. */
export interface MailingDeps {
  links: LinkTokens;
  mail: EmailSender;
  throttle: EmailThrottle;
  hasher: PasswordHasher;
  audit: AuditStore;
  host: string;
}

/** Sends, or fails with the catalog's 503 (the SMTP server refused or could not be reached). */
export async function sendOrFail(mail: EmailSender, message: EmailMessage): Promise<void> {
  try {
    await mail.send(message);
  } catch (err) {
    throw new AppError('email_unavailable', { cause: err });
  }
}

/** A console visitor as audit entries name them. */
export function consoleActor(email: string, meta: ClientMeta, host: string): AuditActor & { userAgent: string } {
  return { actor: `console:${email}`, ip: meta.ip, host, userAgent: meta.userAgent.slice(0, 300) };
}
