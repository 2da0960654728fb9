import type { Config } from '../../config.js';
import type { DefinitionProvider } from '../../domain/definitions/types.js';
import { OpenAiDefinitionProvider } from './openai.js';
import { WordNetProvider } from './wordnet.js';

export { OpenAiDefinitionProvider } from './openai.js';
export { WordNetProvider } from './wordnet.js';

/** The provider DEFINITION_PROVIDER selects. */
export async function createDefinitionProvider(config: Config): Promise<DefinitionProvider> {
  switch (config.DEFINITION_PROVIDER) {
    case 'wordnet':
      return WordNetProvider.open();
    case 'openai':
      return new OpenAiDefinitionProvider({
        baseUrl: config.DEFINITION_API_URL!,
        apiKey: config.DEFINITION_API_KEY,
        model: config.DEFINITION_MODEL,
        timeoutMs: config.DEFINITION_TIMEOUT_MS,
        retries: config.DEFINITION_RETRIES,
      });
    default: {
      const never: never = config.DEFINITION_PROVIDER;
      throw new Error(`unknown DEFINITION_PROVIDER ${String(never)}`);
    }
  }
}
