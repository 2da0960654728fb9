import { AppError } from '../errors.js';
import { costOf } from '../operations/catalog.js';
import { parseKeyword } from '../definitions/validation.js';
import { parseImageOptions } from '../jobs/options.js';
import { parsePrompts, type PromptLimits } from '../jobs/validation.js';
import type { DefinitionService, ImageJobService } from '../ports.js';
import type { Principal } from '../principal.js';
import type { ClientTokenStore } from './records.js';

export interface BudgetLimits extends PromptLimits {
  maxKeywordLength: number;
}

/**
 * A client token's `maxCredits`, held exactly under any concurrency: the credits a request may cost
 * are reserved from the token's budget in one guarded update before the account is charged, and given
 * back when the request is not charged in the end (a 402, a provider failure, an error). Input is
 * validated first, so a bad request is still a 400 and costs no budget. Images refunded later by the
 * workers stay spent from the token's point of view: the budget caps what the token may start.
 */
export function withTokenBudgets(
  services: { definitions: DefinitionService; jobs: ImageJobService },
  store: Pick<ClientTokenStore, 'reserve' | 'release'>,
  limits: BudgetLimits,
): { definitions: DefinitionService; jobs: ImageJobService } {
  const spend = async <R>(principal: Principal, credits: number, run: () => Promise<R>): Promise<R> => {
    const grant = principal.token;
    if (!grant || grant.maxCredits === null) return run();
    if (!(await store.reserve(grant.tokenId, credits, grant.maxCredits))) throw new AppError('token_credit_limit');
    try {
      return await run();
    } catch (err) {
      await store.release(grant.tokenId, credits);
      throw err;
    }
  };
  const { definitions, jobs } = services;
  // Only the charging operations change; every other method is the service's own, so a method added
  // to a service needs nothing here. Prices are the operation catalog's.
  return {
    definitions: overriding(definitions, {
      lookup: (principal, keyword, attempt) => {
        if (!principal.token) return definitions.lookup(principal, keyword, attempt);
        parseKeyword(keyword, limits.maxKeywordLength);
        return spend(principal, costOf('lookup'), () => definitions.lookup(principal, keyword, attempt));
      },
    }),
    jobs: overriding(jobs, {
      create: (principal, prompts, attempt, options) => {
        if (!principal.token) return jobs.create(principal, prompts, attempt, options);
        const cost = costOf('generate', parsePrompts(prompts, limits).length);
        // Refused options never touch the budget, as refused prompts do not.
        parseImageOptions(options, jobs.imageOptions());
        return spend(principal, cost, () => jobs.create(principal, prompts, attempt, options));
      },
    }),
  };
}

/** `target` with some methods replaced: the others are its own, bound to it (a class instance's included). */
function overriding<T extends object>(target: T, overrides: Partial<T>): T {
  const methods: Record<string, unknown> = {};
  for (let o: object | null = target; o && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const name of Object.getOwnPropertyNames(o)) {
      const value = (target as Record<string, unknown>)[name];
      if (name !== 'constructor' && !(name in methods) && typeof value === 'function') methods[name] = value.bind(target);
    }
  }
  return Object.assign(methods, overrides) as T;
}
