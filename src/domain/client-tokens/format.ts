import { randomSecret, sha256Hex } from '../keys/format.js';

/** Client tokens: `wi_tok_` + 64 lowercase hex characters from 32 CSPRNG bytes; only a hash is stored. */
export const TOKEN_PREFIX = 'wi_tok_';
const TOKEN_PATTERN = /^wi_tok_[0-9a-f]{64}$/;

export function generateToken(): string {
  return randomSecret(TOKEN_PREFIX);
}

export function isWellFormedToken(value: string): boolean {
  return TOKEN_PATTERN.test(value);
}

/** Only this is stored, as for API keys. */
export const hashToken = sha256Hex;

/** The bearer value of an `Authorization` header when it is (or claims to be) a client token. */
export function bearerToken(header: string | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  const match = /^Bearer[ ]+(wi_tok_\S*)[ ]*$/i.exec(header);
  return match?.[1];
}
