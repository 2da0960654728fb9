import type { Connection } from 'mongoose';
import { imageRetention, type Config } from '../../src/config.js';
import type { JobCredits } from '../../src/domain/jobs/records.js';
import { ImageJobs } from '../../src/domain/jobs/service.js';
import { openImageQueue, openImageUrlSigner, openImageWork, openWebhookWork, type ImageWork } from '../../workers/services.js';

/**
 * Image jobs as a gateway wires them (workers/services.ts' functions plus the job service), without
 * the rest of the gateway: for tests of the queue and of workers in other processes.
 */
export async function openTestImageJobs(config: Config, connection: Connection, credits: JobCredits): Promise<ImageWork & { service: ImageJobs; close(): Promise<void> }> {
  const queue = await openImageQueue(config, { connection, role: 'test' });
  const signer = await openImageUrlSigner(config, connection);
  const webhooks = await openWebhookWork(config, { connection, queue, signer, log: { info() {}, warn() {}, error() {} } });
  const work = await openImageWork(config, { connection, queue, signer, credits, webhooks });
  const service = new ImageJobs({
    jobs: work.store,
    credits,
    settlement: work.settlement,
    queue,
    signer,
    limits: { maxPrompts: config.MAX_PROMPTS, maxPromptLength: config.MAX_PROMPT_LENGTH },
    offer: work.provider.offer,
    retentionMs: imageRetention(config).retentionMs,
  });
  return {
    ...work,
    service,
    async close() {
      await queue.close();
    },
  };
}
