import type { UsageRow } from '../../domain/usage/types.js';
import { html, type Html } from '../html.js';
import { dailyBarChart, daysBetween } from './charts.js';
import { allowed, page, type PageContext } from './layout.js';

export function overviewPage(ctx: PageContext, opts: { credits: number; lowBalance: number; buyingEnabled: boolean; usage: UsageRow[]; from: Date; to: Date }): Html {
  const days = daysBetween(opts.from, opts.to);
  const perService = (service: string) =>
    days.map((d) => opts.usage.filter((r) => r.service === service && r.day.getTime() === d.getTime()).reduce((s, r) => s + r.credits - r.refunded, 0));
  const definitions = perService('definitions');
  const images = perService('images');
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const spent = sum(opts.usage.map((r) => r.credits - r.refunded));
  return page(
    ctx,
    'Overview',
    html`<section class="cards" aria-label="Account">
  <div class="card stat"><h2>Credit balance</h2><p class="big" data-balance>${opts.credits}</p><p class="hint">1 credit per definition lookup, 1 per image.</p></div>
  <div class="card stat"><h2>Last 30 days</h2><p class="big">${spent}</p><p class="hint">credits spent: ${sum(definitions)} on definitions, ${sum(images)} on images</p></div>
</section>
${opts.credits < opts.lowBalance ? lowBalanceWarning(ctx, opts) : ''}
<section aria-labelledby="usage-title">
  <h2 id="usage-title">Usage, last 30 days</h2>
  ${dailyBarChart('Credits spent per day', {
    days,
    series: [
      { name: 'Definition lookups', className: 's-definitions', values: definitions },
      { name: 'Images', className: 's-images', values: images },
    ],
  })}
  <p><a href="/console/usage">Usage details</a> · <a href="/console/playground">Try the services in the playground</a></p>
</section>`,
  );
}

/**
 * Never a dead end: the warning says how this member gets more credits. Billing when buying is
 * enabled and their role may use it; who may, when it does not; else the operator's CLI command with
 * this account's id (the id no other page needs them to find).
 */
function lowBalanceWarning(ctx: PageContext, opts: { credits: number; lowBalance: number; buyingEnabled: boolean }): Html {
  const state =
    opts.credits <= 0
      ? html`No credits left: calls fail with 402 Insufficient credits.`
      : html`${opts.credits} credit${opts.credits === 1 ? '' : 's'} left (below ${opts.lowBalance}). Calls fail with 402 Insufficient credits once it reaches zero.`;
  const next = !opts.buyingEnabled
    ? html`Buying credits is not enabled on this server: the gateway's operator adds them with <code>npm run cli -- credits grant --account ${ctx.accountId} --amount 100</code>.`
    : allowed(ctx, 'billing.manage')
      ? html`<a href="/console/billing">Buy credits</a>`
      : html`Ask an owner or admin of this account to buy credits on the Billing page.`;
  return html`<p class="warning" role="status"><strong>Low balance:</strong> ${state} ${next}</p>`;
}
