import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

// What `npm ci` would warn about, read from the lockfile: a package whose declared engines leave out a
// Node version the project supports (EBADENGINE), or a peer dependency resolved outside the range its
// dependent declares (ERESOLVE overriding peer dependency). Both must be empty on a fresh clone.
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const manifest = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string } };

interface LockEntry {
  version?: string;
  optional?: boolean;
  os?: string[];
  cpu?: string[];
  link?: boolean;
  engines?: { node?: string } | string[];
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}
const lock = JSON.parse(readFileSync(path.join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };

/** The lowest version of each range of the project's engines: `^20.19.0 || ^24.11.0` → 20.19.0, 24.11.0. */
const supported = manifest.engines.node.split('||').map((range) => semver.minVersion(range.trim())!.version);

/** Entries npm installs on Linux x64 (CI's machine): platform-specific optional packages for elsewhere are skipped by npm. */
const installed = Object.entries(lock.packages).filter(([where, e]) => {
  if (where === '' || e.link) return false;
  const fits = (list: string[] | undefined, value: string) => !list || list.some((v) => v === value || (v.startsWith('!') ? v.slice(1) !== value : false));
  return fits(e.os, 'linux') && fits(e.cpu, 'x64');
});

/** Where Node finds `name` from the package at `where` (node_modules/a/node_modules/b): the nearest node_modules up. */
function resolve(where: string, name: string): LockEntry | undefined {
  let dir = where;
  for (;;) {
    const found = lock.packages[`${dir ? `${dir}/` : ''}node_modules/${name}`];
    if (found) return found;
    if (!dir) return undefined;
    const at = dir.lastIndexOf('/node_modules/');
    dir = at === -1 ? '' : dir.slice(0, at);
  }
}

describe('npm ci on the supported Node versions', () => {
  it(`installs nothing whose engines leave out Node ${supported.join(' or ')}`, () => {
    expect(supported.length).toBeGreaterThanOrEqual(2);
    const refused = installed.flatMap(([where, e]) => {
      const node = Array.isArray(e.engines) ? undefined : e.engines?.node;
      if (!node) return [];
      return supported.filter((v) => !semver.satisfies(v, node, { includePrerelease: true })).map((v) => `${where}@${e.version} wants node ${node}, not ${v}`);
    });
    expect(refused).toEqual([]);
  });

  it('resolves every peer dependency inside the range its dependent declares', () => {
    const conflicts = installed.flatMap(([where, e]) =>
      Object.entries(e.peerDependencies ?? {}).flatMap(([name, range]) => {
        const peer = resolve(where, name);
        if (!peer?.version) return [];
        return semver.satisfies(peer.version, range, { includePrerelease: true }) ? [] : [`${where} wants ${name}@${range}, gets ${peer.version}`];
      }),
    );
    expect(conflicts).toEqual([]);
  });
});
