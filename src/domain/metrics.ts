import type { FinalJobStatus } from './jobs/types.js';
import type { MeteredService } from './usage/types.js';

/** How one image generation ended, as `images_generated_total{outcome}` says. */
export type ImageOutcome = 'succeeded' | 'failed' | 'retried';

/** How one webhook delivery attempt ended: delivered, failed with a retry scheduled, failed for good. */
export type DeliveryOutcome = 'delivered' | 'retry' | 'gave_up';

/**
 * What the domain tells the process's metrics, at the point where it decides: a charge or refund that
 * applied (never its idempotent replay), a job that ended, an image that ended, a delivery attempt
 * recorded, a request refused by the rate limit. The composition root hands in an implementation
 * (src/metrics/prometheus.ts) when METRICS_PORT is set; otherwise nothing is counted.
 */
export interface DomainMetrics {
  creditsCharged(service: MeteredService, amount: number): void;
  creditsRefunded(service: MeteredService, amount: number): void;
  imageJobFinished(status: FinalJobStatus): void;
  /** `seconds`: the provider's time for this attempt; undefined when it was not asked (out of attempts). */
  imageGenerated(outcome: ImageOutcome, seconds: number | undefined): void;
  webhookDelivery(outcome: DeliveryOutcome): void;
  rateLimited(): void;
}

/** Counts nothing: the default of every service that takes metrics. */
export const noMetrics: DomainMetrics = {
  creditsCharged() {},
  creditsRefunded() {},
  imageJobFinished() {},
  imageGenerated() {},
  webhookDelivery() {},
  rateLimited() {},
};
