/**
 * Which services this deployment serves (SERVICES), decided once for every door: REST registers only
 * the routes of served services, and GraphQL and the console get services whose operations answer
 * `route_not_found` for the others (one schema everywhere; the same 404 REST gives).
 */
import type { Config } from '../config.js';
import { AppError } from '../domain/errors.js';
import type { DefinitionService, ImageJobService, JobWatch } from '../domain/ports.js';

export type ServiceName = Config['SERVICES'][number];

export interface Sellable {
  definitions: DefinitionService;
  jobs: ImageJobService;
  jobWatch: JobWatch;
}

export function serves(config: Pick<Config, 'SERVICES'>, service: ServiceName): boolean {
  return config.SERVICES.includes(service);
}

export function exposedOnly<T extends Sellable>(services: T, config: Pick<Config, 'SERVICES'>): T {
  return {
    ...services,
    definitions: serves(config, 'definitions') ? services.definitions : unserved<DefinitionService>(),
    jobs: serves(config, 'images') ? services.jobs : unserved<ImageJobService>(),
    jobWatch: serves(config, 'images') ? services.jobWatch : unserved<JobWatch>(),
  };
}

/** A service this deployment does not serve: every method answers `route_not_found`, whatever methods it has. */
function unserved<S extends object>(): S {
  const off = (): Promise<never> => {
    const refused = Promise.reject(new AppError('route_not_found'));
    // Handled here as well: a method whose answer nobody awaits (a synchronous one, such as viewOf,
    // reached only after another method answered) leaves no unhandled rejection behind.
    refused.catch(() => undefined);
    return refused;
  };
  // Not a thenable (`then`), so that awaiting the object itself stays harmless.
  return new Proxy({} as S, { get: (_, name) => (typeof name === 'string' && name !== 'then' ? off : undefined) });
}
