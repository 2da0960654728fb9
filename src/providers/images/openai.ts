import { endpointUrl, isTimeout, postJson, upstreamMessage, withRetries, type HttpReply, type RetryPolicy, type RetryableFailure } from '../openai-http.js';
import { ProviderError, type GenerateOptions, type GeneratedImage, type ImageProvider } from './types.js';

export interface OpenAiImageProviderOptions {
  /** Base URL ending in `/v1`, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  apiKey?: string;
  model: string;
  size: string;
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
 * with `response_format: b64_json`. Timeouts, 429, 5xx and network failures are retried with exponential
 * backoff (bounded); any other 4xx is permanent and fails at once, so a rejected prompt is not retried.
 */
export class OpenAiImageProvider implements ImageProvider {
  readonly name = 'openai';
  private readonly endpoint: string;
  private readonly policy: RetryPolicy;

  constructor(private readonly options: OpenAiImageProviderOptions) {
    this.endpoint = endpointUrl(options.baseUrl, 'images/generations');
    this.policy = { retries: options.retries, backoffBaseMs: options.backoffBaseMs ?? 250, backoffMaxMs: options.backoffMaxMs ?? 10_000 };
  }

  async generate(prompt: string, options: GenerateOptions = {}): Promise<GeneratedImage> {
    const { signal } = options;
    return withRetries(
      () => this.attempt(prompt, signal),
      (err) => toProviderError(err, signal),
      this.policy,
      signal,
      () => new ProviderError('provider_aborted', 'Image generation was aborted'),
    );
  }

  private async attempt(prompt: string, signal?: AbortSignal): Promise<GeneratedImage> {
    const { model, size, apiKey, timeoutMs } = this.options;
    const res = await postJson(this.endpoint, { model, prompt, n: 1, size, response_format: 'b64_json' }, { apiKey, timeoutMs, signal });
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
    return { data, contentType };
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
