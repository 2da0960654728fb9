import { Schema, type Connection, type Model } from 'mongoose';
import { IMAGE_FORMATS } from '../../domain/jobs/options.js';
import { IMAGE_STATUSES, JOB_STATUSES } from '../../domain/jobs/types.js';

/** Stored shape of a job (collection `jobs`); `_id` is the job id (UUID v4 string). */
export interface JobDoc {
  _id: string;
  accountId: string;
  keyId: string | null;
  status: (typeof JOB_STATUSES)[number];
  totalImages: number;
  succeededImages: number;
  failedImages: number;
  canceledImages: number;
  creditsUsed: number;
  creditsRefunded: number;
  cancelRequestedAt: Date | null;
  charged: boolean;
  withdrawing?: boolean;
  request?: string;
  options?: { size: string; format: 'png' | 'webp' | 'jpeg'; seed: number | null; negativePrompt: string | null };
  oldestStoredAt?: Date;
  retentionSwept?: boolean;
  images: {
    index: number;
    prompt: string;
    status: (typeof IMAGE_STATUSES)[number];
    attempt: number;
    fileId: string | null;
    contentType?: string;
    width?: number;
    height?: number;
    expiredAt?: Date | null;
    error: string | null;
    refund: 'none' | 'pending' | 'done';
    startedAt: Date | null;
    heartbeatAt: Date | null;
    finishedAt: Date | null;
  }[];
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  /** See JobRecord.eventPending. */
  eventPending?: boolean;
}

const imageSchema = new Schema(
  {
    index: { type: Number, required: true },
    prompt: { type: String, required: true },
    status: { type: String, enum: IMAGE_STATUSES, required: true },
    attempt: { type: Number, required: true, default: 0 },
    fileId: { type: String, default: null },
    contentType: { type: String },
    width: { type: Number },
    height: { type: Number },
    expiredAt: { type: Date },
    error: { type: String, default: null },
    refund: { type: String, enum: ['none', 'pending', 'done'], required: true, default: 'none' },
    startedAt: { type: Date, default: null },
    heartbeatAt: { type: Date, default: null },
    finishedAt: { type: Date, default: null },
  },
  { _id: false },
);

const jobSchema = new Schema<JobDoc>(
  {
    _id: { type: String, required: true },
    accountId: { type: String, required: true },
    keyId: { type: String, default: null },
    status: { type: String, enum: JOB_STATUSES, required: true },
    totalImages: { type: Number, required: true },
    succeededImages: { type: Number, required: true, default: 0 },
    failedImages: { type: Number, required: true, default: 0 },
    canceledImages: { type: Number, required: true, default: 0 },
    creditsUsed: { type: Number, required: true },
    creditsRefunded: { type: Number, required: true, default: 0 },
    cancelRequestedAt: { type: Date, default: null },
    charged: { type: Boolean, required: true },
    withdrawing: { type: Boolean },
    request: { type: String },
    options: {
      type: new Schema(
        { size: String, format: { type: String, enum: IMAGE_FORMATS }, seed: { type: Number, default: null }, negativePrompt: { type: String, default: null } },
        { _id: false },
      ),
    },
    oldestStoredAt: { type: Date },
    retentionSwept: { type: Boolean },
    images: { type: [imageSchema], required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
    completedAt: { type: Date, default: null },
    eventPending: { type: Boolean },
  },
  // updatedAt is written by every visible update, with $max: stamps taken before concurrent writes never move it back.
  { collection: 'jobs', versionKey: false, timestamps: false, autoIndex: true },
);

// Lists per account, newest first (cursor pagination on createdAt, _id).
jobSchema.index({ accountId: 1, createdAt: -1, _id: -1 });
// The sweep: non-final jobs without progress, and uncharged leftovers of crashed create requests.
jobSchema.index({ status: 1, updatedAt: 1 });
jobSchema.index({ charged: 1, createdAt: 1 });
// A retry with an Idempotency-Key finds the jobs of its earlier attempts (only keyed creates set it).
jobSchema.index({ request: 1 }, { sparse: true });
// Retention: jobs holding bytes older than IMAGE_RETENTION (and, by completedAt, jobs from before it).
jobSchema.index({ oldestStoredAt: 1, completedAt: 1 });

export function jobModel(connection: Connection): Model<JobDoc> {
  return (connection.models.Job as Model<JobDoc> | undefined) ?? connection.model<JobDoc>('Job', jobSchema);
}
