import { invalid } from '../errors.js';
import { COMMON_PASSWORDS } from './common-passwords.js';

export const MIN_PASSWORD_LENGTH = 12;
export const MAX_PASSWORD_LENGTH = 128;

/** Hashing of console passwords (argon2id in production: src/providers/password-hasher.ts). */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(hash: string, password: string): Promise<boolean>;
}

/** NIST SP 800-63B's rules: a length range and no well-known password; no composition rules. */
export function checkNewPassword(password: unknown, email: string): string {
  if (typeof password !== 'string') throw invalid('password', 'password must be a string');
  const length = [...password].length;
  if (length < MIN_PASSWORD_LENGTH) throw invalid('password', `password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (length > MAX_PASSWORD_LENGTH) throw invalid('password', `password must be at most ${MAX_PASSWORD_LENGTH} characters`);
  const lowered = password.toLowerCase();
  if (COMMON_PASSWORDS.has(lowered) || lowered === email.toLowerCase()) throw invalid('password', 'password is too common; choose another');
  return password;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function normalizeEmail(email: unknown): string {
  if (typeof email !== 'string') throw invalid('email', 'email must be a string');
  const trimmed = email.trim().toLowerCase();
  if (trimmed.length > 254 || !EMAIL.test(trimmed)) throw invalid('email', 'email must be an email address');
  return trimmed;
}
