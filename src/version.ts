import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The gateway's version from its package.json, found by walking up from this module: the same answer
 * from src/ (tsx) and from the compiled dist/src/ (where a fixed relative path would miss it).
 */
function readVersion(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'credit-gateway' && pkg.version) return pkg.version;
    } catch {
      // no package.json here: keep walking up
    }
    const parent = path.dirname(dir);
    if (parent === dir) return '0.0.0';
    dir = parent;
  }
}

export const VERSION = readVersion();
