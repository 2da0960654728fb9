import { setTimeout as sleep } from 'node:timers/promises';
import { DefinitionProviderError, type DefinitionProvider } from '../../domain/definitions/types.js';

export interface OpenAiDefinitionProviderOptions {
  /** Base URL ending in `/v1` (OpenAI, Ollama, vLLM, llama.cpp server). */
  baseUrl: string;
  apiKey?: string;
  model: string;
  /** Per attempt. */
  timeoutMs: number;
  /** Retries after the first attempt, for retryable failures only (timeouts, 429, 5xx, network). */
  retries: number;
  /** First backoff delay; doubles per retry, with jitter; a server's Retry-After is honoured up to backoffMaxMs. */
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  /** Longest definition kept (characters); longer answers are cut at a sentence end. */
  maxLength?: number;
}

const SYSTEM_PROMPT =
  'You are a dictionary. Reply with a concise definition (one to three sentences) of the term the user gives, ' +
  'in plain text, without repeating the term as a heading. If the term is not a word or phrase you can define, ' +
  'reply with exactly: NO_DEFINITION';

type Failure = DefinitionProviderError & { retryable?: boolean; retryAfterMs?: number };

/**
 * Definitions from any OpenAI-compatible chat-completions endpoint: `POST {baseUrl}/chat/completions`.
 * Timeouts, 429, 5xx and network failures are retried with bounded exponential backoff and then reported
 * as `unavailable` (503); other 4xx and malformed answers fail at once as `failed` (502).
 */
export class OpenAiDefinitionProvider implements DefinitionProvider {
  readonly name: string;
  private readonly endpoint: string;

  constructor(private readonly options: OpenAiDefinitionProviderOptions) {
    this.endpoint = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.name = `openai:${options.model}`;
  }

  async define(keyword: string, opts: { signal?: AbortSignal } = {}): Promise<string | null> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.attempt(keyword, opts.signal);
      } catch (err) {
        const failure = toFailure(err, opts.signal);
        if (!failure.retryable || attempt >= this.options.retries) throw failure;
        await sleep(this.backoff(attempt, failure), undefined, { signal: opts.signal }).catch(() => {
          throw new DefinitionProviderError('unavailable', 'Definition lookup was aborted');
        });
      }
    }
  }

  private backoff(attempt: number, err: Failure): number {
    const base = this.options.backoffBaseMs ?? 200;
    const max = this.options.backoffMaxMs ?? 5_000;
    const exp = base * 2 ** attempt;
    return Math.min(max, Math.max(exp / 2 + Math.random() * (exp / 2), err.retryAfterMs ?? 0));
  }

  private async attempt(keyword: string, outer?: AbortSignal): Promise<string | null> {
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
        temperature: 0.2,
        max_tokens: 300,
        messages: [
          { role: 'system', content: SYSTEM_PROMPT },
          // The keyword is data, not instructions: quoted and labelled.
          { role: 'user', content: `Term: ${JSON.stringify(keyword)}` },
        ],
      }),
    });
    const text = await res.text();
    if (!res.ok) throw httpFailure(res.status, res.headers.get('retry-after'));
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw failure('failed', 'Definition provider returned invalid JSON', false);
    }
    const content = (body as { choices?: { message?: { content?: unknown } }[] })?.choices?.[0]?.message?.content;
    if (typeof content !== 'string') throw failure('failed', 'Definition provider response has no choices[0].message.content', false);
    const definition = content.trim();
    if (!definition) throw failure('failed', 'Definition provider returned an empty definition', false);
    if (/^NO_DEFINITION\.?$/i.test(definition)) return null;
    return clip(definition, this.options.maxLength ?? 2000);
  }
}

function failure(kind: 'failed' | 'unavailable', message: string, retryable: boolean, cause?: unknown): Failure {
  const err = new DefinitionProviderError(kind, message, { cause }) as Failure;
  err.retryable = retryable;
  return err;
}

function httpFailure(status: number, retryAfter: string | null): Failure {
  const retryable = status === 429 || status === 408 || status >= 500;
  const err = failure(retryable ? 'unavailable' : 'failed', `Definition provider answered HTTP ${status}`, retryable);
  const seconds = retryAfter === null ? NaN : Number(retryAfter);
  if (Number.isFinite(seconds) && seconds >= 0) err.retryAfterMs = seconds * 1000;
  return err;
}

function toFailure(err: unknown, outer?: AbortSignal): Failure {
  if (err instanceof DefinitionProviderError) return err as Failure;
  if (outer?.aborted) return failure('unavailable', 'Definition lookup was aborted', false, err);
  const name = (err as { name?: string })?.name;
  if (name === 'TimeoutError' || name === 'AbortError') return failure('unavailable', 'Definition provider timed out', true, err);
  return failure('unavailable', 'Definition provider unreachable', true, err);
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  const end = cut.lastIndexOf('. ');
  return end > max / 2 ? cut.slice(0, end + 1) : `${cut.trimEnd()}…`;
}
