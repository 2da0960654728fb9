/**
 * Definition providers turn one keyword into a definition text. The lookup service calls them through
 * this interface only, so the offline WordNet reader and any OpenAI-compatible endpoint are
 * interchangeable by configuration.
 */
export interface DefinitionProvider {
  /** Names the provider in the cache key (`wordnet`, `openai:<model>`). */
  readonly name: string;
  /** The definition, or null when the provider knows no definition for the keyword. Throws DefinitionProviderError. */
  define(keyword: string, options?: { signal?: AbortSignal }): Promise<string | null>;
}

/**
 * A provider that could not answer. `unavailable`: it could not be reached or is overloaded (503,
 * worth retrying later); `failed`: it answered with an error or nonsense (502).
 */
export class DefinitionProviderError extends Error {
  override readonly name = 'DefinitionProviderError';
  readonly code = 'definition_provider_error';
  constructor(
    readonly kind: 'failed' | 'unavailable',
    message: string,
    options: { cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
  }
}

/** Cached definitions per provider and keyword (with a TTL). */
export interface DefinitionCache {
  /** What memory holds, at once: the definition, or undefined (then ask `get`, which may read a store). */
  peek?(provider: string, keyword: string): string | undefined;
  get(provider: string, keyword: string): Promise<string | null>;
  set(provider: string, keyword: string, definition: string): Promise<void>;
}

/** Text returned (and charged) for a keyword the provider has no definition for. */
export function noDefinitionText(keyword: string): string {
  return `No definition found for "${keyword}".`;
}
