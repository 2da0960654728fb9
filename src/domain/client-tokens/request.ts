import { z } from 'zod';
import { invalid } from '../errors.js';
import { parseWith } from '../validation.js';
import { CLIENT_SCOPES, isClientScope, type ClientScope } from './scopes.js';

export const TOKEN_TTL = { min: 60, max: 3600, default: 900 } as const;
export const MAX_TOKEN_ORIGINS = 10;

/** `https://app.example.com` or `http://localhost:5173`, exactly as a browser sends it in `Origin`. */
export function isExactOrigin(value: string): boolean {
  if (value.length > 2048) return false;
  try {
    const url = new URL(value);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === value;
  } catch {
    return false;
  }
}

const ORIGIN_RULE = 'must be a web origin: scheme, host and optional port, no path (e.g. https://app.example.com)';
const SCOPES_RULE = `must be a non-empty array of ${CLIENT_SCOPES.join(', ')}`;
const TTL_RULE = `must be an integer from ${TOKEN_TTL.min} to ${TOKEN_TTL.max}`;
const CREDITS_RULE = 'must be a positive integer';

/** `POST /api/client-tokens` (and GraphQL `createClientToken`): the contract's rules, each naming its field. */
export const mintRequestSchema = z.object(
  {
    origins: z
      .array(z.string({ error: ORIGIN_RULE }).refine(isExactOrigin, ORIGIN_RULE), {
        error: (iss) => (iss.input === undefined || iss.input === null ? 'is required' : 'must be an array of web origins'),
      })
      .min(1, `must have 1 to ${MAX_TOKEN_ORIGINS} entries`)
      .max(MAX_TOKEN_ORIGINS, `must have 1 to ${MAX_TOKEN_ORIGINS} entries`)
      .meta({ description: 'The web origins (scheme, host, optional port; no path) whose pages may use the token, as browsers send them in `Origin`.' }),
    // One rule for the whole list (an unknown entry names `scopes`, not its index), so entries are
    // checked here; the document still lists the values.
    scopes: z
      .array(z.unknown(), { error: SCOPES_RULE })
      .min(1, SCOPES_RULE)
      .refine((values) => values.every(isClientScope), SCOPES_RULE)
      .meta({ items: { type: 'string', enum: [...CLIENT_SCOPES] }, description: 'What the token may do (default: all three). `read` covers me, job, jobs and jobStatus.' })
      .nullish(),
    ttlSeconds: z
      .number({ error: TTL_RULE })
      .int(TTL_RULE)
      .min(TOKEN_TTL.min, TTL_RULE)
      .max(TOKEN_TTL.max, TTL_RULE)
      .meta({ description: `Lifetime in seconds (default ${TOKEN_TTL.default}).` })
      .nullish(),
    maxCredits: z
      .number({ error: CREDITS_RULE })
      .int(CREDITS_RULE)
      .min(1, CREDITS_RULE)
      .meta({ description: 'The most credits this token may spend in total (default: no cap but the balance).' })
      .nullish(),
    trustedDocumentsOnly: z
      .boolean({ error: 'must be true or false' })
      .meta({ description: 'Only operations registered with `PUT /api/graphql/documents` may run with the token (default false).' })
      .nullish(),
  },
  { error: 'must be a JSON object' },
);

export interface MintRequest {
  origins: string[];
  scopes: ClientScope[];
  ttlSeconds: number;
  maxCredits: number | null;
  trustedDocumentsOnly: boolean;
}

/**
 * The contract's rules for a mint request, each refusal naming the field and the rule. `keyScopes`:
 * the scopes the minting key's permissions allow (a token never gets more; by default it gets these).
 */
export function parseMintRequest(input: unknown, keyScopes: readonly ClientScope[] = CLIENT_SCOPES): MintRequest {
  const body = parseWith(mintRequestSchema, input, 'body');
  const asked = body.scopes as ClientScope[] | null | undefined;
  const beyond = asked?.filter((s) => !keyScopes.includes(s)) ?? [];
  if (beyond.length) {
    const has = keyScopes.length ? `only ${keyScopes.join(', ')}` : 'none of lookup, generate, read';
    throw invalid('scopes', `scopes must be among this API key's permissions: it has ${has} (not ${[...new Set(beyond)].join(', ')})`);
  }
  const scopes = asked ? CLIENT_SCOPES.filter((s) => asked.includes(s)) : CLIENT_SCOPES.filter((s) => keyScopes.includes(s));
  if (!scopes.length) throw invalid('scopes', 'scopes: this API key has none of the permissions lookup, generate, read that a client token could have');
  return {
    origins: [...new Set(body.origins)],
    scopes,
    ttlSeconds: body.ttlSeconds ?? TOKEN_TTL.default,
    maxCredits: body.maxCredits ?? null,
    trustedDocumentsOnly: body.trustedDocumentsOnly ?? false,
  };
}
