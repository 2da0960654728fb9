import { endpointUrl, isTimeout, postJson, upstreamMessage, withRetries, type HttpReply, type RetryPolicy, type RetryableFailure } from '../openai-http.js';
import type { ImageFormat, ImageOffer } from '../../domain/jobs/options.js';
import { ProviderError, type GenerateOptions, type GeneratedImage, type ImageProvider } from './types.js';

export interface OpenAiImageProviderOptions {
  /** Base URL ending in `/v1`, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  /** Default size (IMAGE_SIZE). */
  size: string;
  /** Sizes the model takes (IMAGE_SIZES); default: the default size only. */
  sizes?: string[];
  /** Formats the model takes as `output_format` (IMAGE_FORMATS); default: png only (nothing sent). */
  formats?: ImageFormat[];
  /** The endpoint takes `seed` (IMAGE_SEED); default false. */
  seed?: boolean;
  /** The endpoint takes `negative_prompt` (IMAGE_NEGATIVE_PROMPT); default false. */
  negativePrompt?: boolean;
  /** Per attempt. */
  timeoutMs: number;
  /** Retries after the first attempt, for retryable failures only. */
  retries: number;
  /** First backoff delay; doubles per retry, with jitter. */
  backoffBaseMs?: number;
  /** Upper bound for one backoff delay, including a server's Retry-After. */
  backoffMaxMs?: number;
}

/**
 * Any OpenAI-compatible images endpoint (OpenAI, LocalAI, vLLM-style servers): `POST /images/generations`
 * with `response_format: b64_json`. It offers what it is configured to: the size goes out as `size`, a
 * format other than PNG as `output_format` (gpt-image models), and `seed` / `negative_prompt` only where
 * the endpoint is said to take them (OpenAI's own API takes neither). Timeouts, 429, 5xx and network failures are retried with exponential
 * backoff (bounded); any other 4xx is permanent and fails at once, so a rejected prompt is not retried.
 */
export class OpenAiImageProvider implements ImageProvider {
  readonly name = 'openai';
  readonly offer: ImageOffer;
  private readonly endpoint: string;
  private readonly policy: RetryPolicy;

  constructor(private readonly options: OpenAiImageProviderOptions) {
    this.endpoint = endpointUrl(options.baseUrl, 'images/generations');
    const sizes = options.sizes?.length ? options.sizes : [options.size];
    const formats = options.formats?.length ? options.formats : ['png' as const];
    this.offer = Object.freeze({
      sizes: sizes.includes(options.size) ? sizes : [options.size, ...sizes],
      defaultSize: options.size,
      // PNG is every request's default, so it is always offered.
      formats: formats.includes('png') ? formats : ['png' as const, ...formats],
      seed: options.seed ?? false,
      negativePrompt: options.negativePrompt ?? false,
    });
    this.policy = { retries: options.retries, backoffBaseMs: options.backoffBaseMs ?? 250, backoffMaxMs: options.backoffMaxMs ?? 10_000 };
  }

  async generate(prompt: string, options: GenerateOptions = {}): Promise<GeneratedImage> {
    const { signal } = options;
    return withRetries(
      () => this.attempt(prompt, options),
      (err) => toProviderError(err, signal),
      this.policy,
      signal,
      () => new ProviderError('provider_aborted', 'Image generation was aborted'),
    );
  }

  private async attempt(prompt: string, options: GenerateOptions): Promise<GeneratedImage> {
    const { model, apiKey, timeoutMs } = this.options;
    const { signal } = options;
    const size = options.size ? `${options.size.width}x${options.size.height}` : this.options.size;
    const request: Record<string, unknown> = { model, prompt, n: 1, size, response_format: 'b64_json' };
    if (options.format && options.format !== 'png') request.output_format = options.format;
    if (this.offer.seed && options.seed != null) request.seed = options.seed;
    if (this.offer.negativePrompt && options.negativePrompt) request.negative_prompt = options.negativePrompt;
    const res = await postJson(this.endpoint, request, { apiKey, timeoutMs, signal });
    if (!res.ok) throw httpError(res);
    let body: unknown;
    try {
      body = JSON.parse(res.text);
    } catch {
      throw new ProviderError('provider_bad_response', 'Image provider returned invalid JSON', { status: res.status });
    }
    const b64 = (body as { data?: { b64_json?: unknown }[] })?.data?.[0]?.b64_json;
    if (typeof b64 !== 'string' || b64.length === 0) {
      throw new ProviderError('provider_bad_response', 'Image provider response has no data[0].b64_json', { status: res.status });
    }
    const data = Buffer.from(b64, 'base64');
    const contentType = sniffImageType(data);
    if (!contentType) throw new ProviderError('provider_bad_response', 'Image provider returned data that is not an image');
    const [width, height] = size.split('x').map(Number);
    return { data, contentType, width, height };
  }
}

function httpError({ status, text, retryAfterMs }: HttpReply): ProviderError & RetryableFailure {
  const upstream = upstreamMessage(text);
  const suffix = upstream ? `: ${upstream}` : '';
  let err: ProviderError & RetryableFailure;
  if (status === 429) err = new ProviderError('provider_rate_limited', `Image provider rate limited (HTTP 429)${suffix}`, { status });
  else if (status >= 500 || status === 408) err = new ProviderError('provider_server_error', `Image provider failed (HTTP ${status})${suffix}`, { status });
  else err = new ProviderError('provider_rejected', `Image provider rejected the request (HTTP ${status})${suffix}`, { status });
  err.retryAfterMs = retryAfterMs;
  return err;
}

function toProviderError(err: unknown, outer?: AbortSignal): ProviderError & RetryableFailure {
  if (err instanceof ProviderError) return err;
  if (outer?.aborted) return new ProviderError('provider_aborted', 'Image generation was aborted', { cause: err });
  if (isTimeout(err)) return new ProviderError('provider_timeout', 'Image provider timed out', { cause: err });
  return new ProviderError('provider_network_error', 'Image provider unreachable', { cause: err });
}

export function sniffImageType(data: Buffer): string | null {
  if (data.length >= 8 && data.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'image/jpeg';
  if (data.length >= 12 && data.toString('latin1', 0, 4) === 'RIFF' && data.toString('latin1', 8, 12) === 'WEBP') return 'image/webp';
  return null;
}
