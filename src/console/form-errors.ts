/** A refused form field, as a form shows it: the domain's 400 message, or rethrown when it is not one. */
import { isAppError } from '../domain/errors.js';

export function fieldError(err: unknown): string {
  if (isAppError(err) && err.code === 'invalid_request') return capitalize(err.message);
  throw err;
}

/** `Too many attempts. Try again in 12 minutes.` */
export function tooManyAttempts(retryAfterSeconds: number): string {
  const minutes = Math.ceil(retryAfterSeconds / 60);
  return `Too many attempts. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
