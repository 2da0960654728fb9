import { setTimeout as sleep } from 'node:timers/promises';
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

  constructor(private readonly options: OpenAiImageProviderOptions) {
    this.endpoint = `${options.baseUrl.replace(/\/+$/, '')}/images/generations`;
  }

  async generate(prompt: string, options: GenerateOptions = {}): Promise<GeneratedImage> {
    const { retries } = this.options;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt(prompt, options.signal);
      } catch (err) {
        const pe = toProviderError(err, options.signal);
        if (!pe.retryable || attempt >= retries) throw pe;
        await sleep(this.backoff(attempt, pe), undefined, { signal: options.signal }).catch(() => {
          throw new ProviderError('provider_aborted', 'Image generation was aborted');
        });
      }
    }
  }

  private backoff(attempt: number, err: ProviderError & { retryAfterMs?: number }): number {
    const base = this.options.backoffBaseMs ?? 250;
    const max = this.options.backoffMaxMs ?? 10_000;
    const exp = base * 2 ** attempt;
    const jittered = exp / 2 + Math.random() * (exp / 2);
    return Math.min(max, Math.max(jittered, err.retryAfterMs ?? 0));
  }

  private async attempt(prompt: string, outer?: AbortSignal): Promise<GeneratedImage> {
    const timeout = AbortSignal.timeout(this.options.timeoutMs);
    const signal = outer ? AbortSignal.any([outer, timeout]) : timeout;
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    const res = await fetch(this.endpoint, {
      method: 'POST',
      headers,
      signal,
      body: JSON.stringify({
        model: this.options.model,
        prompt,
        n: 1,
        size: this.options.size,
        response_format: 'b64_json',
      }),
    });
    const text = await res.text();
    if (!res.ok) throw httpError(res.status, text, res.headers.get('retry-after'));
    let body: unknown;
    try {
      body = JSON.parse(text);
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

function httpError(status: number, body: string, retryAfter: string | null): ProviderError {
  const upstream = upstreamMessage(body);
  const suffix = upstream ? `: ${upstream}` : '';
  let err: ProviderError & { retryAfterMs?: number };
  if (status === 429) err = new ProviderError('provider_rate_limited', `Image provider rate limited (HTTP 429)${suffix}`, { status });
  else if (status >= 500 || status === 408) err = new ProviderError('provider_server_error', `Image provider failed (HTTP ${status})${suffix}`, { status });
  else err = new ProviderError('provider_rejected', `Image provider rejected the request (HTTP ${status})${suffix}`, { status });
  const seconds = retryAfter === null ? NaN : Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) err.retryAfterMs = seconds * 1000;
  return err;
}

/** The `error.message` of an OpenAI-style error body, shortened; upstream bodies can be large HTML pages. */
function upstreamMessage(body: string): string {
  try {
    const msg = (JSON.parse(body) as { error?: { message?: unknown } })?.error?.message;
    if (typeof msg === 'string') return msg.slice(0, 200);
  } catch {
    // not JSON: fall through
  }
  return '';
}

function toProviderError(err: unknown, outer?: AbortSignal): ProviderError {
  if (err instanceof ProviderError) return err;
  if (outer?.aborted) return new ProviderError('provider_aborted', 'Image generation was aborted', { cause: err });
  const name = (err as { name?: string })?.name;
  if (name === 'TimeoutError' || name === 'AbortError') {
    return new ProviderError('provider_timeout', 'Image provider timed out', { cause: err });
  }
  return new ProviderError('provider_network_error', 'Image provider unreachable', { cause: err });
}

export function sniffImageType(data: Buffer): string | null {
  if (data.length >= 8 && data.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'image/png';
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'image/jpeg';
  if (data.length >= 12 && data.toString('latin1', 0, 4) === 'RIFF' && data.toString('latin1', 8, 12) === 'WEBP') return 'image/webp';
  return null;
}
