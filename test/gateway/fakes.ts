import { DefinitionProviderError, type DefinitionProvider } from '../../src/domain/definitions/types.js';

/** A definition provider the test steers: answers, "no definition", or failures; counts calls. */
export class ScriptedProvider implements DefinitionProvider {
  readonly name = 'scripted';
  calls: string[] = [];
  mode: 'ok' | 'none' | 'unavailable' | 'failed' | 'crash' = 'ok';
  delayMs = 0;

  async define(keyword: string): Promise<string | null> {
    this.calls.push(keyword);
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    switch (this.mode) {
      case 'ok':
        return `definition of ${keyword}`;
      case 'none':
        return null;
      case 'unavailable':
        throw new DefinitionProviderError('unavailable', 'upstream timed out');
      case 'failed':
        throw new DefinitionProviderError('failed', 'upstream said 400');
      case 'crash':
        throw new TypeError('provider bug');
    }
  }
}
