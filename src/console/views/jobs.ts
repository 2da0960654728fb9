import type { JobView } from '../../domain/jobs/types.js';
import { FINAL_JOB_STATUSES } from '../../domain/jobs/types.js';
import { html, when, type Html } from '../html.js';
import { allowed, csrfField, page, type PageContext } from './layout.js';

/** What a Cancel left to tell: the job as it is now, or why nothing happened. */
export type JobsNotice = { job: JobView } | { error: string };

/** A 128-pixel-wide thumbnail keeps the image's aspect ratio (a banner is not squeezed into a square). */
function thumbHeight(image: { width: number; height: number }): number {
  return image.width > 0 ? Math.round((128 * image.height) / image.width) : 128;
}

export function imageGrid(job: JobView): Html {
  return html`<ul class="images" aria-label="Images">
  ${job.images.map(
    (i) => html`<li class="image ${i.status}">
    ${i.url ? html`<img src="${i.url}" alt="${i.prompt}" width="128" height="${thumbHeight(i)}" loading="lazy">` : html`<div class="placeholder" aria-hidden="true"></div>`}
    <span class="prompt">${i.prompt}</span>
    <span class="status">${i.status}${i.error ? html`: ${i.error}` : ''}</span>
  </li>`,
  )}
</ul>`;
}

export function jobSummary(job: JobView): Html {
  const canceled = job.images.filter((i) => i.status === 'canceled').length;
  const notDone = [job.failedImages ? `${job.failedImages} failed` : '', canceled ? `${canceled} canceled` : ''].filter(Boolean).join(', ');
  return html`<p class="job-status"><span class="badge ${job.status}">${job.status}</span> ${job.succeededImages} of ${job.totalImages} images done${notDone ? html`, ${notDone} (${job.creditsRefunded} credits refunded)` : ''}</p>`;
}

function cancelForm(ctx: PageContext, job: JobView): Html {
  if (FINAL_JOB_STATUSES.has(job.status) || !allowed(ctx, 'jobs.cancel')) return html``;
  return html`<form method="post" action="/console/jobs/${job.jobId}/cancel" class="actions">
    ${csrfField(ctx.csrfToken)}
    <button type="submit" class="danger secondary" aria-describedby="job-${job.jobId}">Cancel</button>
  </form>`;
}

function noticeOf(notice: JobsNotice | undefined): Html {
  if (!notice) return html``;
  if ('error' in notice) return html`<p class="error" role="alert">${notice.error}</p>`;
  const { job } = notice;
  const state = job.status === 'canceled' ? 'canceled' : 'being canceled: the images already running finish first';
  return html`<p class="notice" role="status">Job <code>${job.jobId.slice(0, 8)}</code> ${state}. ${job.creditsRefunded} ${job.creditsRefunded === 1 ? 'credit' : 'credits'} refunded.</p>`;
}

export function jobsPage(ctx: PageContext, opts: { jobs: JobView[]; next: string | null; notice?: JobsNotice }): Html {
  return page(
    ctx,
    'Jobs',
    html`<p class="lead">Image jobs of this account, newest first, whichever key (or the playground) started them. Canceling a job refunds the images that have not started.</p>
${noticeOf(opts.notice)}
${
  opts.jobs.length === 0
    ? html`<p class="empty">No image jobs yet. <a href="/console/playground">Generate images in the playground.</a></p>`
    : opts.jobs.map(
        (job) => html`<article class="card job" aria-labelledby="job-${job.jobId}">
  <h2 id="job-${job.jobId}">Job <code>${job.jobId.slice(0, 8)}</code> · ${when(job.createdAt)}</h2>
  ${jobSummary(job)}
  ${cancelForm(ctx, job)}
  ${imageGrid(job)}
</article>`,
      )
}
${opts.next ? html`<p><a href="/console/jobs?after=${encodeURIComponent(opts.next)}">Older jobs</a></p>` : ''}`,
  );
}
