/**
 * The operation catalog: every operation a caller can run through an API door (REST or GraphQL), with
 * what it costs, who may call it and what it counts, written once. REST routes name their operation
 * (`config: { operation }`), both GraphQL doors' admission reads it per root field, client-token
 * budgets, key credit limits and the services' charges price with it, and the rate limit counts its
 * units. A door that serves an operation missing here fails test/security/permissions.test.ts.
 */
import type { ClientScope } from '../client-tokens/scopes.js';
import type { KeyPermission } from '../keys/permissions.js';

export interface OperationSpec {
  /** The key permission a caller needs (an API key, or the key that minted a client token). */
  readonly permission: KeyPermission;
  /** The client-token scope it needs; null: client tokens may not run it at all (`api_key_required`). */
  readonly scope: ClientScope | null;
  /** Whether it spends credits (the balance, a key's credit limit, a token's budget). */
  readonly charges: boolean;
  /** Credits per unit (0 when free). */
  readonly credits: number;
  /** What one unit is: the call itself, or each prompt of it (`generate`: one image per prompt). */
  readonly per: 'call' | 'prompt';
  /**
   * Units of the per-key rate limit one call counts, beyond the request that carries it (a request
   * counts at least 1): every charging GraphQL field counts, so 15 aliased `lookup`s are 15.
   */
  readonly rateUnits: number;
  /** Which SERVICES entry serves it (null: always served). */
  readonly service: 'definitions' | 'images' | null;
  /** Where the doors serve it: its GraphQL root field, its REST routes (`METHOD /path`). */
  readonly graphql: { readonly type: 'Query' | 'Mutation' | 'Subscription'; readonly field: string } | null;
  readonly rest: readonly string[];
}

export const OPERATIONS = {
  lookup: {
    permission: 'lookup',
    scope: 'lookup',
    charges: true,
    credits: 1,
    per: 'call',
    rateUnits: 1,
    service: 'definitions',
    graphql: { type: 'Mutation', field: 'lookup' },
    rest: ['POST /api/playground/query'],
  },
  generate: {
    permission: 'generate',
    scope: 'generate',
    charges: true,
    credits: 1,
    per: 'prompt',
    rateUnits: 1,
    service: 'images',
    graphql: { type: 'Mutation', field: 'generate' },
    rest: ['POST /api/playground/images'],
  },
  // Who may start jobs may stop them (the contract's `Images` checkbox: generate, cancel).
  cancelJob: {
    permission: 'generate',
    scope: 'generate',
    charges: false,
    credits: 0,
    per: 'call',
    rateUnits: 0,
    service: 'images',
    graphql: { type: 'Mutation', field: 'cancelJob' },
    rest: ['POST /api/playground/images/:jobId/cancel'],
  },
  job: {
    permission: 'read',
    scope: 'read',
    charges: false,
    credits: 0,
    per: 'call',
    rateUnits: 0,
    service: 'images',
    graphql: { type: 'Query', field: 'job' },
    rest: ['GET /api/playground/images/:jobId'],
  },
  // What generate takes here: the same permission and scope, so a key that may generate may ask.
  imageOptions: {
    permission: 'generate',
    scope: 'generate',
    charges: false,
    credits: 0,
    per: 'call',
    rateUnits: 0,
    service: 'images',
    graphql: { type: 'Query', field: 'imageOptions' },
    rest: ['GET /api/playground/images/options'],
  },
  jobs: {
    permission: 'read',
    scope: 'read',
    charges: false,
    credits: 0,
    per: 'call',
    rateUnits: 0,
    service: 'images',
    graphql: { type: 'Query', field: 'jobs' },
    rest: [],
  },
  jobStatus: {
    permission: 'read',
    scope: 'read',
    charges: false,
    credits: 0,
    per: 'call',
    rateUnits: 0,
    service: 'images',
    graphql: { type: 'Subscription', field: 'jobStatus' },
    rest: [],
  },
  me: {
    permission: 'read',
    scope: 'read',
    charges: false,
    credits: 0,
    per: 'call',
    rateUnits: 0,
    service: null,
    graphql: { type: 'Query', field: 'me' },
    rest: [],
  },
  createClientToken: {
    permission: 'client_tokens',
    scope: null,
    charges: false,
    credits: 0,
    per: 'call',
    rateUnits: 0,
    service: null,
    graphql: { type: 'Mutation', field: 'createClientToken' },
    rest: ['POST /api/client-tokens'],
  },
  registerDocuments: {
    permission: 'client_tokens',
    scope: null,
    charges: false,
    credits: 0,
    per: 'call',
    rateUnits: 0,
    service: null,
    graphql: null,
    rest: ['PUT /api/graphql/documents'],
  },
  listDocuments: {
    permission: 'client_tokens',
    scope: null,
    charges: false,
    credits: 0,
    per: 'call',
    rateUnits: 0,
    service: null,
    graphql: null,
    rest: ['GET /api/graphql/documents'],
  },
  deleteDocument: {
    permission: 'client_tokens',
    scope: null,
    charges: false,
    credits: 0,
    per: 'call',
    rateUnits: 0,
    service: null,
    graphql: null,
    rest: ['DELETE /api/graphql/documents/:id'],
  },
  createWebhook: {
    permission: 'webhooks',
    scope: null,
    charges: false,
    credits: 0,
    per: 'call',
    rateUnits: 0,
    service: null,
    graphql: null,
    rest: ['POST /api/webhooks'],
  },
  listWebhooks: {
    permission: 'webhooks',
    scope: null,
    charges: false,
    credits: 0,
    per: 'call',
    rateUnits: 0,
    service: null,
    graphql: null,
    rest: ['GET /api/webhooks'],
  },
  deleteWebhook: {
    permission: 'webhooks',
    scope: null,
    charges: false,
    credits: 0,
    per: 'call',
    rateUnits: 0,
    service: null,
    graphql: null,
    rest: ['DELETE /api/webhooks/:id'],
  },
} as const satisfies Record<string, OperationSpec>;

export type OperationName = keyof typeof OPERATIONS;

export const OPERATION_NAMES = Object.keys(OPERATIONS) as OperationName[];

export function isOperationName(value: unknown): value is OperationName {
  return typeof value === 'string' && Object.hasOwn(OPERATIONS, value);
}

export function operation(name: OperationName): OperationSpec {
  return OPERATIONS[name];
}

/** What `units` units of an operation cost in credits (`generate` with 3 prompts: 3 units). */
export function costOf(name: OperationName, units = 1): number {
  return OPERATIONS[name].credits * units;
}

/** GraphQL root field name → its operation (root field names are unique across Query, Mutation and Subscription). */
const BY_GRAPHQL_FIELD: ReadonlyMap<string, OperationName> = new Map(
  OPERATION_NAMES.flatMap((name) => {
    const graphql: OperationSpec['graphql'] = OPERATIONS[name].graphql;
    return graphql ? [[graphql.field, name] as const] : [];
  }),
);

/** The operation a GraphQL root field runs; undefined for a field the catalog does not know (introspection's own). */
export function operationOfGraphQLField(field: string): OperationName | undefined {
  return BY_GRAPHQL_FIELD.get(field);
}

/** The label a price reads as in route summaries and descriptions: `1 credit`, `1 credit per prompt`, `free`. */
export function priceText(name: OperationName): string {
  const spec: OperationSpec = OPERATIONS[name];
  if (!spec.charges) return 'free';
  const credits = `${spec.credits} credit${spec.credits === 1 ? '' : 's'}`;
  return spec.per === 'prompt' ? `${credits} per prompt` : credits;
}
