import { Schema, Types, type Connection, type Model } from 'mongoose';
import { DEFAULT_LOW_CREDITS_THRESHOLD } from '../../domain/webhooks/types.js';
import type { UsageCounters } from './usage.js';
import type { HeldCredits } from '../../domain/credits/records.js';

/** Stored shape of an account (collection `accounts`). */
export interface AccountDoc {
  _id: Types.ObjectId;
  name: string;
  /** Integer, never negative: every change is one guarded update (see MongoAccountStore.apply). */
  credits: number;
  /**
   * Ids of balance operations applied or voided whose outcome is not yet recorded elsewhere (settle
   * removes them): what makes a retried operation apply at most once. One-shot changes (lookups) add none.
   */
  ops: string[];
  /**
   * Usage counters of recent days, by bucket `<yyyymmdd>_<service>_<source>` (see usageBucket): changed
   * in the same update as the balance; past days move to the `usage` collection (MongoUsageStore).
   * Every read of the account but usage's own leaves it out.
   */
  usage?: Record<string, UsageCounters>;
  /** At or before the day of the oldest bucket in `usage` (absent: none): how a roll-up finds accounts. */
  usageOldestDay?: Date;
  /** `credits.low` threshold (absent: the default, 10); see MongoLowCreditsStore. */
  lowCreditsThreshold?: number;
  /** True after `credits.low` fired, until the balance is back at or above the threshold. */
  lowCreditsDisarmed?: boolean;
  /** A `credits.low` event written with the disarming, until it is published. */
  lowCreditsEvent?: { eventId: string; credits: number; threshold: number; at: Date } | null;
  /** Billing (issue 25): the account's one Stripe customer, set once by a guarded update. */
  stripeCustomerId?: string;
  /** A Checkout payment saved a card on that customer. */
  cardSaved?: boolean;
  autoRecharge?: { enabled: boolean; threshold: number; credits: number };
  rechargeFailure?: { at: Date; reason: string } | null;
  /** The one automatic recharge in flight (its trigger id, and the pack it buys), until granted or failed. */
  /** `sentAt`: when the worker sent it to Stripe (from then on, turning auto-recharge off no longer stops it). */
  rechargeInFlight?: { id: string; at: Date; credits?: number; sentAt?: Date } | null;
  /** Automatic recharges started per UTC day (`YYYY-MM-DD` → count). */
  rechargeCounts?: Record<string, number>;
  /**
   * Owners of the account as the last-owner rule counts them (src/domain/team/ports.ts): absent until
   * the first change to the team, then started from the users.
   */
  ownerCount?: number;
  /** An owner requires two-factor authentication of every member. */
  require2fa?: boolean;
  /**
   * Capped keys' credits moved onto the account (issue 33), by key id: a capped charge takes from
   * them in the same guarded update as the balance. See KeyCreditsOnAccount.
   */
  keyHeld?: Record<string, HeldCredits>;
  /** Refund op ids given to `keyHeld` (once per op), the newest 100. */
  keyRefundOps?: string[];
  createdAt: Date;
  updatedAt: Date;
}

/**
 * Upper bound of `ops`. The list holds unsettled operations (jobs being created, refunds being
 * recorded), void markers and admin grants, all rare, so the bound guards against ids whose settle was
 * lost in a crash rather than being a time window: lookups, however many, never push an id out.
 */
export const OPS_KEPT = 1000;

const accountSchema = new Schema<AccountDoc>(
  {
    name: { type: String, required: true },
    credits: {
      type: Number,
      required: true,
      min: 0,
      validate: { validator: Number.isInteger, message: 'credits must be an integer' },
    },
    ops: { type: [String], default: [] },
    usage: { type: Schema.Types.Mixed },
    usageOldestDay: { type: Date },
    lowCreditsThreshold: { type: Number },
    lowCreditsDisarmed: { type: Boolean },
    lowCreditsEvent: { type: Schema.Types.Mixed },
    stripeCustomerId: { type: String },
    cardSaved: { type: Boolean },
    autoRecharge: { type: Schema.Types.Mixed },
    rechargeFailure: { type: Schema.Types.Mixed },
    rechargeInFlight: { type: Schema.Types.Mixed },
    rechargeCounts: { type: Schema.Types.Mixed },
    ownerCount: { type: Number },
    keyHeld: { type: Schema.Types.Mixed },
    keyRefundOps: { type: [String], default: undefined },
    require2fa: { type: Boolean },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'accounts', versionKey: false },
);
accountSchema.index({ usageOldestDay: 1 }, { sparse: true });
accountSchema.index({ 'rechargeInFlight.at': 1 }, { sparse: true });

export function accountModel(connection: Connection): Model<AccountDoc> {
  return (connection.models.Account as Model<AccountDoc> | undefined) ?? connection.model<AccountDoc>('Account', accountSchema);
}

/** The state read from an account document (fields absent: the defaults). */
export function lowCreditsStateOf(doc: Pick<AccountDoc, 'lowCreditsThreshold' | 'lowCreditsDisarmed'>): { threshold: number; armed: boolean } {
  return { threshold: doc.lowCreditsThreshold ?? DEFAULT_LOW_CREDITS_THRESHOLD, armed: doc.lowCreditsDisarmed !== true };
}

