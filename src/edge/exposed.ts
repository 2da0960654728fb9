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
  const off = async (): Promise<never> => {
    throw new AppError('route_not_found');
  };
  return {
    ...services,
    definitions: serves(config, 'definitions') ? services.definitions : { lookup: off },
    jobs: serves(config, 'images') ? services.jobs : { create: off, get: off, getMany: off, list: off, cancel: off, viewOf: () => null },
    jobWatch: serves(config, 'images') ? services.jobWatch : { watch: off },
  };
}
