import { AppError } from '../errors.js';
import { parseKeyword } from '../definitions/validation.js';
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
  return {
    definitions: {
      lookup: (principal, keyword) => {
        if (!principal.token) return definitions.lookup(principal, keyword);
        parseKeyword(keyword, limits.maxKeywordLength);
        return spend(principal, 1, () => definitions.lookup(principal, keyword));
      },
    },
    jobs: {
      get: jobs.get.bind(jobs),
      getMany: jobs.getMany.bind(jobs),
      list: jobs.list.bind(jobs),
      viewOf: jobs.viewOf.bind(jobs),
      cancel: jobs.cancel.bind(jobs),
      create: (principal, prompts, attempt) => {
        if (!principal.token) return jobs.create(principal, prompts, attempt);
        const cost = parsePrompts(prompts, limits).length;
        return spend(principal, cost, () => jobs.create(principal, prompts, attempt));
      },
    },
  };
}
