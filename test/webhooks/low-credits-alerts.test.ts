import { describe, expect, it } from 'vitest';
import type { LowCreditsEvent, LowCreditsState, LowCreditsStore } from '../../src/domain/webhooks/ports.js';
import { LowCreditsAlerts } from '../../src/domain/webhooks/low-credits.js';

/** A store that records what it is asked; `stored` is what `state()` reads. */
function recordingStore(stored: LowCreditsState | null) {
  const calls: string[] = [];
  const store = {
    state: async () => (calls.push('state'), stored),
    fire: async (_accountId: string, balance: number, _event: LowCreditsEvent) => (calls.push(`fire ${balance}`), true),
    rearm: async (_accountId: string, balance: number) => (calls.push(`rearm ${balance}`), true),
  } as unknown as LowCreditsStore;
  return { store, calls };
}

function alertsWith(stored: LowCreditsState | null) {
  const { store, calls } = recordingStore(stored);
  const published: number[] = [];
  const alerts = new LowCreditsAlerts({ store, publisher: { publishLowCredits: async (_id, event) => void published.push(event.credits) } });
  return { alerts, calls, published };
}

describe('credits.low: what a balance change asks of the store', () => {
  it('an armed alert above its threshold, state known: nothing to await, nothing asked', () => {
    const { alerts, calls } = alertsWith(null);
    expect(alerts.observe('a', 50, { threshold: 10, armed: true })).toBeUndefined();
    expect(alerts.observe('a', 5, { threshold: 10, armed: false })).toBeUndefined();
    expect(calls).toEqual([]);
  });

  it('crossing below an armed threshold fires and publishes; back at the threshold re-arms', async () => {
    const { alerts, calls, published } = alertsWith(null);
    await alerts.observe('a', 9, { threshold: 10, armed: true });
    await alerts.observe('a', 10, { threshold: 10, armed: false });
    expect(calls).toEqual(['fire 9', 'rearm 10']);
    expect(published).toEqual([9]);
  });

  it('with the state unknown it is read first, and acted on only if the balance crosses it', async () => {
    const below = alertsWith({ threshold: 10, armed: true });
    await below.alerts.observe('a', 3);
    expect(below.calls).toEqual(['state', 'fire 3']);
    const above = alertsWith({ threshold: 10, armed: true });
    await above.alerts.observe('a', 30);
    expect(above.calls).toEqual(['state']);
  });
});
