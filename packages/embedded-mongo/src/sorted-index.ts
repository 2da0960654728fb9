// An ordered multiset of index entries kept as a list of sorted blocks (a flat B-tree): insertion and
// removal cost O(log n + block size) and range scans walk blocks in order, so index-served operations
// stay flat as a collection grows.
export type Entry = { key: any[]; rid: number };
export type EntryCompare = (a: Entry, b: Entry) => number;

const MAX_BLOCK = 256;

export class SortedIndex {
  private blocks: Entry[][] = [];
  size = 0;

  constructor(private readonly cmp: EntryCompare) {}

  /** Index of the first block whose last entry is >= probe (by `cmp`); blocks.length if none. */
  private findBlock(probe: (e: Entry) => number): number {
    let lo = 0;
    let hi = this.blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const b = this.blocks[mid];
      if (probe(b[b.length - 1]) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private static lowerBound(block: Entry[], probe: (e: Entry) => number): number {
    let lo = 0;
    let hi = block.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (probe(block[mid]) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // Entry-keyed searches (no probe closure: these run on every write).
  private findBlockOf(e: Entry): number {
    const cmp = this.cmp;
    let lo = 0;
    let hi = this.blocks.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      const b = this.blocks[mid];
      if (cmp(b[b.length - 1], e) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private lowerBoundOf(block: Entry[], e: Entry): number {
    const cmp = this.cmp;
    let lo = 0;
    let hi = block.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cmp(block[mid], e) < 0) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  insert(e: Entry): void {
    this.size++;
    if (this.blocks.length === 0) {
      this.blocks.push([e]);
      return;
    }
    let bi = this.findBlockOf(e);
    if (bi === this.blocks.length) bi--;
    const block = this.blocks[bi];
    const at = this.lowerBoundOf(block, e);
    if (at === block.length) block.push(e);
    else block.splice(at, 0, e);
    if (block.length > MAX_BLOCK) this.blocks.splice(bi + 1, 0, block.splice(MAX_BLOCK >> 1));
  }

  remove(e: Entry): boolean {
    const bi = this.findBlockOf(e);
    if (bi === this.blocks.length) return false;
    const block = this.blocks[bi];
    const i = this.lowerBoundOf(block, e);
    if (i >= block.length || this.cmp(block[i], e) !== 0) return false;
    block.splice(i, 1);
    if (block.length === 0) this.blocks.splice(bi, 1);
    this.size--;
    return true;
  }

  /**
   * Entries from the first one where `probe(e) >= 0` onwards, in order. `probe` compares an entry
   * with the start bound (negative: entry sorts before the bound).
   */
  *scanFrom(probe: ((e: Entry) => number) | undefined): Generator<Entry> {
    let bi = probe ? this.findBlock(probe) : 0;
    let i = probe && bi < this.blocks.length ? SortedIndex.lowerBound(this.blocks[bi], probe) : 0;
    while (bi < this.blocks.length) {
      const block = this.blocks[bi];
      // A block may be split or shrink while a consumer pauses; re-locate by the last yielded entry.
      while (i < block.length) {
        const e = block[i];
        yield e;
        if (this.blocks[bi] !== block || block[i] !== e) {
          const again = this.relocateAfter(e);
          bi = again[0];
          i = again[1];
          break;
        }
        i++;
      }
      if (i >= (this.blocks[bi]?.length ?? 0)) {
        bi++;
        i = 0;
      }
    }
  }

  /**
   * Entries backwards from the last one where `probe(e) < 0`. `probe` returns a negative number for
   * entries up to the end bound and 0 for entries after it.
   */
  *scanBackBefore(probe: (e: Entry) => number): Generator<Entry> {
    let bi = this.findBlock(probe);
    let i: number;
    if (bi === this.blocks.length) {
      bi--;
      i = bi >= 0 ? this.blocks[bi].length - 1 : -1;
    } else {
      i = SortedIndex.lowerBound(this.blocks[bi], probe) - 1;
    }
    while (bi >= 0) {
      const block = this.blocks[bi];
      for (; i >= 0; i--) yield block[i];
      bi--;
      if (bi >= 0) i = this.blocks[bi].length - 1;
    }
  }

  /** Position just after entry e (which may have been removed meanwhile). */
  private relocateAfter(e: Entry): [number, number] {
    const probe = (x: Entry): number => (this.cmp(x, e) <= 0 ? -1 : 1);
    const bi = this.findBlock(probe);
    if (bi === this.blocks.length) return [bi, 0];
    return [bi, SortedIndex.lowerBound(this.blocks[bi], probe)];
  }

  clear(): void {
    this.blocks = [];
    this.size = 0;
  }
}
