import type { Config } from '../../config.js';
import { BuiltinImageProvider } from './builtin.js';
import { OpenAiImageProvider } from './openai.js';
import type { ImageProvider } from './types.js';
import { UnreachableCaseError } from '../../domain/errors.js';

export * from './types.js';
export { BUILTIN_OFFER, BuiltinImageProvider } from './builtin.js';
export { OpenAiImageProvider } from './openai.js';

/** The provider IMAGE_PROVIDER selects. */
export function createImageProvider(config: Config): ImageProvider {
  const kind = config.IMAGE_PROVIDER;
  switch (kind) {
    case 'builtin':
      return new BuiltinImageProvider();
    case 'openai':
      return new OpenAiImageProvider({
        // loadConfig guarantees IMAGE_API_URL when IMAGE_PROVIDER=openai.
        baseUrl: config.IMAGE_API_URL!,
        apiKey: config.IMAGE_API_KEY,
        model: config.IMAGE_MODEL,
        size: config.IMAGE_SIZE,
        sizes: config.IMAGE_SIZES,
        formats: config.IMAGE_FORMATS,
        seed: config.IMAGE_SEED,
        negativePrompt: config.IMAGE_NEGATIVE_PROMPT,
        timeoutMs: config.IMAGE_TIMEOUT_MS,
        retries: config.IMAGE_RETRIES,
      });
    default:
      throw new UnreachableCaseError(kind);
  }
}
