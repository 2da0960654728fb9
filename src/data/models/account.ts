import { Schema, Types, type Connection, type Model } from 'mongoose';

/** Stored shape of an account (collection `accounts`). */
export interface AccountDoc {
  _id: Types.ObjectId;
  name: string;
  /** Integer, never negative: every change is one guarded update (see MongoAccountStore.apply). */
  credits: number;
  /** Ids of the last balance operations applied or voided: what makes each operation apply at most once. */
  ops: string[];
  createdAt: Date;
  updatedAt: Date;
}

/** Operation ids remembered per account. Retries of one operation arrive within seconds, never 1,000 operations later. */
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
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'accounts', versionKey: false },
);

export function accountModel(connection: Connection): Model<AccountDoc> {
  return (connection.models.Account as Model<AccountDoc> | undefined) ?? connection.model<AccountDoc>('Account', accountSchema);
}
