// Which build the benchmarks measure: BENCH_BUILD=dist (default: the compiled build production runs,
// `npm run build`), tsx (the sources through tsx, as `npm start`), or compare (bench/gateway.ts: both,
// in interleaved rounds).
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

export type BenchBuild = 'dist' | 'tsx' | 'compare';

export function benchBuild(): BenchBuild {
  const mode = process.env.BENCH_BUILD ?? 'dist';
  if (mode !== 'dist' && mode !== 'tsx' && mode !== 'compare') throw new Error(`BENCH_BUILD must be dist, tsx or compare, not "${mode}"`);
  return mode;
}

/** Runs `npm run build` when dist/ is missing or older than a source file (the build starts clean). */
export function ensureBuild(root: string): void {
  const built = statSync(path.join(root, 'dist/src/main.js'), { throwIfNoEntry: false })?.mtimeMs ?? 0;
  const newest = Math.max(
    ...['src', 'workers'].flatMap((dir) =>
      readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => statSync(path.join(e.parentPath, e.name)).mtimeMs),
    ),
  );
  if (built >= newest) return;
  console.log(built ? 'dist/ is older than the sources: npm run build' : 'no dist/: npm run build');
  const result = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('npm run build failed');
}
