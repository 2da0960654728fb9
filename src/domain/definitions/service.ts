import type { IdempotentAttempt } from '../idempotency/service.js';
import { AppError } from '../errors.js';
import { costOf } from '../operations/catalog.js';
import type { DefinitionResult, DefinitionService } from '../ports.js';
import { sourceOf, type ChargeHolder, type Principal } from '../principal.js';
import type { UsageTag } from '../usage/types.js';
import { DefinitionProviderError, noDefinitionText, type DefinitionCache, type DefinitionProvider } from './types.js';
import { parseKeyword } from './validation.js';

/** What a lookup needs of the credit service. */
export interface LookupCredits {
  /**
   * opId null: a one-shot charge, never sent again (nothing for the account to remember); an op id (a
   * lookup under an Idempotency-Key): at most once per id, until settled. `usage` counts it.
   * `holder`: the calling key, whose credit limit (if any) must allow the charge too (key_credit_limit).
   */
  charge(accountId: string, amount: number, opId: string | null, usage: UsageTag, holder?: ChargeHolder): Promise<number>;
  refund(accountId: string, amount: number, opId: null, info: { reason: string; keyId: string | null; keyword: string }, usage: UsageTag): Promise<unknown>;
  /** The op id's outcome is recorded elsewhere (the idempotency record): the account may forget it. */
  settle(accountId: string, opId: string): Promise<void>;
}

export interface DefinitionLookupDeps {
  credits: LookupCredits;
  provider: DefinitionProvider;
  cache: DefinitionCache;
  maxKeywordLength: number;
  /** Cache failures never fail a lookup; they are reported here. */
  onCacheError?: (err: unknown) => void;
}

/**
 * Definition lookup, the same for REST and GraphQL: validate, charge its price (the operation catalog's;
 * 402 charges nothing),
 * then ask the cache or the provider. A provider failure refunds the credit once and is a 502/503.
 */
export class DefinitionLookup implements DefinitionService {
  constructor(private readonly deps: DefinitionLookupDeps) {}

  async lookup(principal: Principal, input: unknown, attempt?: IdempotentAttempt | null): Promise<DefinitionResult> {
    const keyword = parseKeyword(input, this.deps.maxKeywordLength);
    // Charge first: the balance check and the deduction are one guarded update, so concurrent lookups
    // can never spend the same credit twice; a failed provider call gives it back below. Without an
    // Idempotency-Key nothing sends either again, so neither needs an operation id on the account.
    // Under one, a retry may take over an attempt that died after its charge: the charge carries the
    // attempt's id, which the account keeps until the answer is stored for replay.
    const usage: UsageTag = { service: 'definitions', source: sourceOf(principal) };
    const cost = costOf('lookup');
    const opId = attempt ? `lookup:${attempt.ref}` : null;
    const credits = await this.deps.credits.charge(principal.accountId, cost, opId, usage, principal);
    if (opId) attempt!.afterStored?.(() => this.deps.credits.settle(principal.accountId, opId));
    // A definition in memory is answered at once (no promise); anything else may wait on the store or the provider.
    let definition = this.inMemory(keyword);
    if (definition !== undefined) return { keyword, definition, credits };
    try {
      definition = await this.define(keyword);
    } catch (err) {
      // Whatever the provider threw, the caller got nothing: give the credit back.
      const kind = err instanceof DefinitionProviderError ? err.kind : 'failed';
      await this.deps.credits.refund(principal.accountId, cost, null, { reason: `provider_${kind}`, keyId: principal.keyId, keyword }, usage);
      // Given back: a retry under the same key must pay again (a crash just before this lets it look up for free, never twice).
      if (opId) await this.deps.credits.settle(principal.accountId, opId);
      throw new AppError(kind === 'unavailable' ? 'provider_unavailable' : 'provider_failed', { cause: err, retryAfter: kind === 'unavailable' ? 5 : undefined });
    }
    return { keyword, definition, credits };
  }

  /** The cache's memory hit, if any; a cache that throws is reported and skipped (the credit is already charged). */
  private inMemory(keyword: string): string | undefined {
    try {
      return this.deps.cache.peek?.(this.deps.provider.name, keyword);
    } catch (err) {
      this.deps.onCacheError?.(err);
      return undefined;
    }
  }

  private async define(keyword: string): Promise<string> {
    const { provider, cache } = this.deps;
    const cached = await cache.get(provider.name, keyword).catch((err: unknown) => {
      this.deps.onCacheError?.(err);
      return null;
    });
    if (cached !== null) return cached;
    const definition = (await provider.define(keyword)) ?? noDefinitionText(keyword);
    await cache.set(provider.name, keyword, definition).catch((err: unknown) => this.deps.onCacheError?.(err));
    return definition;
  }
}
