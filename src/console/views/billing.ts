import type { BillingOverview } from '../../domain/billing/service.js';
import type { CreditPack, HistoryRow } from '../../domain/billing/types.js';
import { html, when, type Html } from '../html.js';
import { csrfField, page, type PageContext } from './layout.js';

export interface BillingPageData extends BillingOverview {
  /** `?checkout=success` or `?checkout=canceled`: the return from Stripe Checkout. */
  checkout?: 'success' | 'canceled';
  error?: string;
  saved?: boolean;
}

/** An amount in minor units as people read it: `$5.00`, `€40.00`, `¥500`. */
export function money(value: number, currency: string): string {
  const format = new Intl.NumberFormat('en', { style: 'currency', currency: currency.toUpperCase() });
  const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
  return format.format(value / 10 ** digits);
}

function packForm(ctx: PageContext, pack: CreditPack, currency: string): Html {
  const priceId = `pack-${pack.credits}-price`;
  return html`<form method="post" action="/console/billing/checkout" class="pack card">
    ${csrfField(ctx.csrfToken)}
    <input type="hidden" name="pack" value="${pack.credits}">
    <p class="big">${pack.credits.toLocaleString('en')} <span class="unit">credits</span></p>
    <p id="${priceId}" class="price">${money(pack.price, currency)}</p>
    <button type="submit" aria-describedby="${priceId}">Buy ${pack.credits} credits</button>
  </form>`;
}

function historyTable(rows: HistoryRow[]): Html {
  if (rows.length === 0) return html`<p class="empty">No purchases or grants yet.</p>`;
  return html`<div class="table-wrap"><table class="cards-sm">
  <caption>Credits bought, granted and refunded, newest first</caption>
  <thead><tr><th scope="col">Date</th><th scope="col">Credits</th><th scope="col">Amount</th><th scope="col">Status</th></tr></thead>
  <tbody>
  ${rows.map(
    (r) => html`<tr>
    <td data-label="Date">${when(r.at)}</td>
    <td data-label="Credits">${r.credits.toLocaleString('en')}</td>
    <td data-label="Amount">${r.amount ? money(r.amount.value, r.amount.currency) : '—'}</td>
    <td data-label="Status">${r.status}</td>
  </tr>`,
  )}
  </tbody>
</table></div>`;
}

function autoRechargeForm(ctx: PageContext, data: BillingPageData): Html {
  const settings = data.account.autoRecharge;
  const max = data.maxRechargesPerDay;
  const usable = data.account.cardSaved && max > 0;
  const chosen = settings?.credits ?? data.catalog.packs[0]?.credits;
  const why = max === 0 ? 'Automatic recharge is turned off on this server.' : 'Automatic recharge needs a card saved by an earlier purchase.';
  return html`<section class="card" aria-labelledby="recharge-title">
  <h2 id="recharge-title">Automatic recharge</h2>
  <p class="hint">When a charge takes the balance below the threshold, the card saved with your last purchase is charged for the chosen pack (at most ${max} ${max === 1 ? 'time' : 'times'} a day, UTC).</p>
  ${usable ? '' : html`<p class="hint" id="recharge-needs-card">${why}</p>`}
  <form method="post" action="/console/billing/auto-recharge" class="stack">
    ${csrfField(ctx.csrfToken)}
    <label><input type="checkbox" name="enabled" value="on"${settings?.enabled ? html` checked` : ''}${usable ? '' : html` disabled aria-describedby="recharge-needs-card"`}> Recharge automatically</label>
    <label for="recharge-threshold">When the balance falls below</label>
    <input id="recharge-threshold" name="threshold" type="number" min="1" step="1" required value="${settings?.threshold ?? 10}">
    <label for="recharge-pack">Buy</label>
    <select id="recharge-pack" name="pack">
      ${data.catalog.packs.map((p) => html`<option value="${p.credits}"${p.credits === chosen ? html` selected` : ''}>${p.credits} credits (${money(p.price, data.catalog.currency)})</option>`)}
    </select>
    <button type="submit">Save</button>
  </form>
</section>`;
}

export function billingPage(ctx: PageContext, data: BillingPageData): Html {
  const failure = data.account.rechargeFailure;
  return page(
    ctx,
    'Billing',
    html`${data.checkout === 'success' ? html`<p class="notice" role="status"><strong>Payment received.</strong> The credits are added as soon as Stripe confirms the payment; <a href="/console/billing?checkout=success">refresh</a> if the balance has not changed yet.</p>` : ''}
${data.checkout === 'canceled' ? html`<p class="notice" role="status">Payment canceled: nothing was charged.</p>` : ''}
${data.saved ? html`<p class="notice" role="status">Automatic recharge saved.</p>` : ''}
${failure ? html`<p class="error" role="alert">Automatic recharge failed ${when(failure.at)} (${failure.reason}) and was turned off.</p>` : ''}
${data.rechargeLimit ? html`<p class="notice" role="status">Daily limit of automatic recharges reached (${data.rechargeLimit.maxPerDay} a day): automatic recharge starts again after midnight UTC.</p>` : ''}
${data.error ? html`<p class="error" role="alert">${data.error}</p>` : ''}
<div class="card stat"><h2>Credit balance</h2><p class="big" data-balance>${data.balance}</p></div>
<h2>Buy credits</h2>
${
  data.buyingEnabled
    ? html`<div class="cards packs">${data.catalog.packs.map((p) => packForm(ctx, p, data.catalog.currency))}</div><p class="hint">Payments are made on Stripe Checkout; this server never sees card details.</p>`
    : html`<p class="empty">Buying credits is not enabled on this server</p>`
}
<h2>Purchase history</h2>
${historyTable(data.history)}
${data.buyingEnabled ? autoRechargeForm(ctx, data) : ''}`,
  );
}
