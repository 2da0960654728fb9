import type { ImageFormat, ImageOffer } from '../../domain/jobs/options.js';

/**
 * Image providers turn one prompt into one image. Workers call them through this interface only, so the
 * builtin generator and any OpenAI-compatible endpoint are interchangeable by configuration.
 */
export interface GeneratedImage {
  data: Buffer;
  /** MIME type of `data`, served as the image URL's Content-Type. */
  contentType: string;
  /** Dimensions of `data`; absent: the size asked for. */
  width?: number;
  height?: number;
}

export interface GenerateOptions {
  /** Aborts the generation (worker shutdown, lost lock). */
  signal?: AbortSignal;
  /** One of the offer's sizes; absent: its default. */
  size?: { width: number; height: number };
  /** Absent: png. */
  format?: ImageFormat;
  /** This image's seed (the job's seed + its index); null or absent: none. */
  seed?: number | null;
  negativePrompt?: string | null;
}

export interface ImageProvider {
  readonly name: string;
  /** What it can make: the options a request is validated against. */
  readonly offer: ImageOffer;
  generate(prompt: string, options?: GenerateOptions): Promise<GeneratedImage>;
}

/**
 * Why a provider call failed. Workers decide by `retryable` (and `code`), never by `instanceof`,
 * because the error may have crossed a process boundary or been serialized into the job document.
 */
export type ProviderErrorCode =
  | 'provider_timeout'
  | 'provider_rate_limited'
  | 'provider_server_error'
  | 'provider_network_error'
  | 'provider_rejected'
  | 'provider_bad_response'
  | 'provider_aborted';

const RETRYABLE: Record<ProviderErrorCode, boolean> = {
  provider_timeout: true,
  provider_rate_limited: true,
  provider_server_error: true,
  provider_network_error: true,
  provider_rejected: false,
  provider_bad_response: false,
  provider_aborted: false,
};

export class ProviderError extends Error {
  override readonly name = 'ProviderError';
  readonly code: ProviderErrorCode;
  readonly retryable: boolean;
  /** Upstream HTTP status, when there was one. */
  readonly status?: number;

  constructor(code: ProviderErrorCode, message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.retryable = RETRYABLE[code];
    this.status = options.status;
  }
}

/** True when trying again later can help; works on any thrown value, including plain objects. */
export function isRetryableError(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { retryable?: unknown }).retryable === true;
}
