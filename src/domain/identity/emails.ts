import { absoluteLink, composeEmail, tokenLink } from '../email/compose.js';
import type { EmailMessage } from '../email/ports.js';

/** The emails of sign-up and password reset: what they say, and where their links point. */

/**
 * Says nothing the requester typed (the account name could be worded as an instruction to the
 * reader); only the address it is sent to, which the reader owns.
 */
export function verifyEmailMessage(to: string, baseUrl: string, token: string): EmailMessage {
  return composeEmail({
    to,
    subject: 'Confirm your email to create your account',
    intro: [
      'Someone (we hope you) asked to create an account on credit-gateway with this email address.',
      'Open the link below within 24 hours to confirm it: the account is created then. Opened in another browser than the one the sign-up form was sent from, the link first asks for the password chosen at sign-up.',
    ],
    action: { label: 'Confirm email and create account', url: tokenLink(baseUrl, '/console/verify-email', token) },
    outro: ['If you did not ask for this, ignore this email: nothing is created.'],
  });
}

export function accountExistsMessage(to: string, baseUrl: string, token: string): EmailMessage {
  return composeEmail({
    to,
    subject: 'You already have an account',
    intro: ['Someone (we hope you) tried to sign up on credit-gateway with this email address, which already has an account.', 'Sign in, or, if you forgot your password, set a new one within the next hour:'],
    action: { label: 'Reset your password', url: tokenLink(baseUrl, '/console/reset-password', token) },
    outro: [`Sign in: ${absoluteLink(baseUrl, '/console/sign-in')}`, 'If this was not you, ignore this email: nothing has changed.'],
  });
}

export function resetPasswordMessage(to: string, baseUrl: string, token: string): EmailMessage {
  return composeEmail({
    to,
    subject: 'Reset your password',
    intro: ['Someone (we hope you) asked to reset the password of your credit-gateway account.', 'Open the link below within an hour to choose a new password. Every session of yours ends when you do.'],
    action: { label: 'Set a new password', url: tokenLink(baseUrl, '/console/reset-password', token) },
    outro: ['If you did not ask for this, ignore this email: your password stays as it is.'],
  });
}
