import type { TrustedDocuments } from '../domain/trusted-documents/service.js';
import DataLoader from 'dataloader';
import type { CreditBalances, DefinitionService, ImageJobService, JobUrlContext, JobWatch, KeyAuthenticator } from '../domain/ports.js';
import type { Principal } from '../domain/principal.js';
import type { JobView } from '../domain/jobs/types.js';
import type { Idempotency } from '../domain/idempotency/service.js';
import type { ClientTokens } from '../domain/client-tokens/service.js';
import type { KeySummary } from '../domain/keys/manager.js';

/** The domain services the GraphQL door calls: the same objects REST calls. */
export interface GraphQLServices {
  keys: KeyAuthenticator;
  balances: CreditBalances;
  definitions: DefinitionService;
  jobs: ImageJobService;
  /** `jobStatus`: a job's changes as the caller may see them. */
  jobWatch: JobWatch;
  idempotency: Pick<Idempotency, 'run'>;
  /** The calling key's settings (`me { key }`); absent: null. */
  apiKeys?: { get(keyId: string): Promise<KeySummary> };
  /** Minting client tokens (`createClientToken`); absent: the mutation answers NOT_FOUND. */
  tokens?: Pick<ClientTokens, 'mint' | 'verify'>;
  /** Registered documents (`PUT /api/graphql/documents`) and the rule of `trustedDocumentsOnly` tokens; absent: none registered. */
  documents?: Pick<TrustedDocuments, 'register' | 'list' | 'delete' | 'trusted'>;
}

export interface Loaders {
  /** Account id → credit balance (null: unknown account). */
  balances: DataLoader<string, number | null>;
  /** Job id → the caller's job (null: unknown, malformed or another account's). */
  jobs: DataLoader<string, JobView | null>;
}

/** Per-operation context: one per HTTP request, one per WebSocket subscription. */
export interface GraphQLContext {
  principal: Principal;
  requestId: string;
  urls: JobUrlContext;
  services: GraphQLServices;
  loaders: Loaders;
  /** Aborted (reason: an AppError) when the WebSocket's key is deleted or its token expires; HTTP: never. */
  signal: AbortSignal;
  /** The caller's address (audit entries), when known. */
  ip: string | null;
}

/**
 * Loaders are built per operation, never shared: they cache by key for the operation's lifetime, and
 * a longer cache would serve one caller's view to another or stale balances after a charge.
 */
export function createLoaders(services: GraphQLServices, principal: Principal, urls: JobUrlContext): Loaders {
  return new LazyLoaders(services, principal, urls);
}

/**
 * Each loader is built on first use: most operations (a lookup, a generate) never load anything. A
 * class, not an object literal with getters, which V8 builds far more slowly (one per request).
 */
class LazyLoaders implements Loaders {
  #balances?: Loaders['balances'];
  #jobs?: Loaders['jobs'];

  constructor(
    private readonly services: GraphQLServices,
    private readonly principal: Principal,
    private readonly urls: JobUrlContext,
  ) {}

  get balances(): Loaders['balances'] {
    return (this.#balances ??= new DataLoader<string, number | null>((ids) => this.services.balances.balances(ids)));
  }

  get jobs(): Loaders['jobs'] {
    return (this.#jobs ??= new DataLoader<string, JobView | null>((ids) => this.services.jobs.getMany(this.principal, ids, this.urls)));
  }
}

/** HTTP operations have no connection that a key deletion could end. */
const NEVER_ABORTED = new AbortController().signal;

export function createContext(input: {
  services: GraphQLServices;
  principal: Principal;
  requestId: string;
  urls: JobUrlContext;
  signal?: AbortSignal;
  ip?: string | null;
}): GraphQLContext {
  return {
    principal: input.principal,
    requestId: input.requestId,
    urls: input.urls,
    services: input.services,
    loaders: createLoaders(input.services, input.principal, input.urls),
    signal: input.signal ?? NEVER_ABORTED,
    ip: input.ip ?? null,
  };
}
