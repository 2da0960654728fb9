import type { DefinitionResult } from '../../domain/ports.js';
import type { ImageOffer } from '../../domain/jobs/options.js';
import type { JobCreated, JobView } from '../../domain/jobs/types.js';
import { html, type Html } from '../html.js';
import { imageGrid, jobSummary } from './jobs.js';
import { csrfField, page, type PageContext } from './layout.js';

export interface PlaygroundState {
  credits: number;
  keyword?: string;
  definition?: DefinitionResult;
  lookupError?: string;
  prompts?: string;
  /** What the deployment offers: the Size and Format choices, and whether there is a Seed. */
  offer: ImageOffer;
  /** The options as the form sent them (kept on the page after a refusal). */
  chosen?: { size?: string; format?: string; seed?: string };
  created?: JobCreated;
  job?: JobView;
  generateError?: string;
}

const FORMAT_NAMES = { png: 'PNG', webp: 'WebP', jpeg: 'JPEG' } as const;

export function playgroundPage(ctx: PageContext, s: PlaygroundState): Html {
  return page(
    ctx,
    'Playground',
    html`<p class="lead">Try both services as this account. Calls are real: 1 credit per lookup and per image. Balance: <strong data-balance>${s.credits}</strong> credits.</p>
<div class="cards">
<section class="card" aria-labelledby="lookup-title">
  <h2 id="lookup-title">Definition lookup</h2>
  <form method="post" action="/console/playground/lookup" class="stack" data-lookup>
    ${csrfField(ctx.csrfToken)}
    <label for="keyword">Keyword</label>
    <input id="keyword" name="keyword" required maxlength="100" value="${s.keyword ?? ''}" autocomplete="off">
    <button type="submit">Look up</button>
  </form>
  <div class="result" aria-live="polite" data-lookup-result>
    ${s.lookupError ? html`<p class="error" role="alert">${s.lookupError}</p>` : ''}
    ${s.definition ? html`<h3>${s.definition.keyword}</h3><pre class="definition">${s.definition.definition}</pre>` : ''}
  </div>
</section>
<section class="card" aria-labelledby="generate-title">
  <h2 id="generate-title">Image generation</h2>
  <form method="post" action="/console/playground/generate" class="stack" data-generate>
    ${csrfField(ctx.csrfToken)}
    <label for="prompts">Prompts</label>
    <textarea id="prompts" name="prompts" rows="4" required aria-describedby="prompts-hint">${s.prompts ?? ''}</textarea>
    <p id="prompts-hint" class="hint">One prompt per line; one image (and 1 credit) each, whatever the options.</p>
    <div class="options">
      <div><label for="size">Size</label>
      <select id="size" name="size">${s.offer.sizes.map((size) => html`<option value="${size}"${(s.chosen?.size ?? s.offer.defaultSize) === size ? html` selected` : ''}>${size}</option>`)}</select></div>
      <div><label for="format">Format</label>
      <select id="format" name="format">${s.offer.formats.map((f) => html`<option value="${f}"${(s.chosen?.format ?? 'png') === f ? html` selected` : ''}>${FORMAT_NAMES[f]}</option>`)}</select></div>
      ${s.offer.seed
        ? html`<div><label for="seed">Seed</label>
      <input id="seed" name="seed" inputmode="numeric" pattern="[0-9]*" maxlength="10" value="${s.chosen?.seed ?? ''}" aria-describedby="seed-hint" autocomplete="off"></div>`
        : ''}
    </div>
    ${s.offer.seed ? html`<p id="seed-hint" class="hint">Optional. The same prompt, seed, size and format make the same image.</p>` : ''}
    <button type="submit">Generate</button>
  </form>
  <div class="result" aria-live="polite" data-generate-result>
    ${s.generateError ? html`<p class="error" role="alert">${s.generateError}</p>` : ''}
    ${s.job ? html`<div data-job="${s.job.jobId}">${jobSummary(s.job)}${imageGrid(s.job)}<p><a href="/console/playground?job=${s.job.jobId}">Refresh</a></p></div>` : ''}
  </div>
</section>
</div>`,
  );
}
