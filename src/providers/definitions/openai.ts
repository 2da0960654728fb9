import { endpointUrl, isTimeout, postJson, withRetries, type HttpReply, type RetryPolicy, type RetryableFailure } from '../openai-http.js';
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

type Failure = DefinitionProviderError & RetryableFailure;

/**
 * Definitions from any OpenAI-compatible chat-completions endpoint: `POST {baseUrl}/chat/completions`.
 * Timeouts, 429, 5xx and network failures are retried with bounded exponential backoff and then reported
 * as `unavailable` (503); other 4xx and malformed answers fail at once as `failed` (502).
 */
export class OpenAiDefinitionProvider implements DefinitionProvider {
  readonly name: string;
  private readonly endpoint: string;
  private readonly policy: RetryPolicy;

  constructor(private readonly options: OpenAiDefinitionProviderOptions) {
    this.endpoint = endpointUrl(options.baseUrl, 'chat/completions');
    this.name = `openai:${options.model}`;
    this.policy = { retries: options.retries, backoffBaseMs: options.backoffBaseMs ?? 200, backoffMaxMs: options.backoffMaxMs ?? 5_000 };
  }

  async define(keyword: string, opts: { signal?: AbortSignal } = {}): Promise<string | null> {
    const { signal } = opts;
    return withRetries(
      () => this.attempt(keyword, signal),
      (err) => toFailure(err, signal),
      this.policy,
      signal,
      () => new DefinitionProviderError('unavailable', 'Definition lookup was aborted'),
    );
  }

  private async attempt(keyword: string, signal?: AbortSignal): Promise<string | null> {
    const { model, apiKey, timeoutMs } = this.options;
    const request = {
      model,
      temperature: 0.2,
      max_tokens: 300,
      messages: [
        { role: 'system', content: SYSTEM_PROMPT },
        // The keyword is data, not instructions: quoted and labelled.
        { role: 'user', content: `Term: ${JSON.stringify(keyword)}` },
      ],
    };
    const res = await postJson(this.endpoint, request, { apiKey, timeoutMs, signal });
    if (!res.ok) throw httpFailure(res);
    let body: unknown;
    try {
      body = JSON.parse(res.text);
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

function httpFailure({ status, retryAfterMs }: HttpReply): Failure {
  const retryable = status === 429 || status === 408 || status >= 500;
  const err = failure(retryable ? 'unavailable' : 'failed', `Definition provider answered HTTP ${status}`, retryable);
  err.retryAfterMs = retryAfterMs;
  return err;
}

function toFailure(err: unknown, outer?: AbortSignal): Failure {
  if (err instanceof DefinitionProviderError) return err as Failure;
  if (outer?.aborted) return failure('unavailable', 'Definition lookup was aborted', false, err);
  if (isTimeout(err)) return failure('unavailable', 'Definition provider timed out', true, err);
  return failure('unavailable', 'Definition provider unreachable', true, err);
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = text.slice(0, max);
  const end = cut.lastIndexOf('. ');
  return end > max / 2 ? cut.slice(0, end + 1) : `${cut.trimEnd()}…`;
}
