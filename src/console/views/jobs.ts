import type { JobView } from '../../domain/jobs/types.js';
import { html, when, type Html } from '../html.js';
import { page, type PageContext } from './layout.js';

export function imageGrid(job: JobView): Html {
  return html`<ul class="images" aria-label="Images">
  ${job.images.map(
    (i) => html`<li class="image ${i.status}">
    ${i.url ? html`<img src="${i.url}" alt="${i.prompt}" width="128" height="128" loading="lazy">` : html`<div class="placeholder" aria-hidden="true"></div>`}
    <span class="prompt">${i.prompt}</span>
    <span class="status">${i.status}${i.error ? html`: ${i.error}` : ''}</span>
  </li>`,
  )}
</ul>`;
}

export function jobSummary(job: JobView): Html {
  return html`<p class="job-status"><span class="badge ${job.status}">${job.status}</span> ${job.succeededImages} of ${job.totalImages} images done${job.failedImages ? html`, ${job.failedImages} failed (${job.creditsRefunded} credits refunded)` : ''}</p>`;
}

export function jobsPage(ctx: PageContext, opts: { jobs: JobView[]; next: string | null }): Html {
  return page(
    ctx,
    'Jobs',
    html`<p class="lead">Image jobs of this account, newest first, whichever key (or the playground) started them.</p>
${
  opts.jobs.length === 0
    ? html`<p class="empty">No image jobs yet. <a href="/console/playground">Generate images in the playground.</a></p>`
    : opts.jobs.map(
        (job) => html`<article class="card job" aria-labelledby="job-${job.jobId}">
  <h2 id="job-${job.jobId}">Job <code>${job.jobId.slice(0, 8)}</code> · ${when(job.createdAt)}</h2>
  ${jobSummary(job)}
  ${imageGrid(job)}
</article>`,
      )
}
${opts.next ? html`<p><a href="/console/jobs?after=${encodeURIComponent(opts.next)}">Older jobs</a></p>` : ''}`,
  );
}
