/**
 * Values made from a key on a hot path (a parsed id, a field path, a JSON text), at most `limit` of
 * them, all forgotten at once when full: their working set is small, and remaking one now and then
 * costs less than keeping an order of use.
 */
export class Kept<K, V> {
  private readonly values = new Map<K, V>();

  constructor(private readonly limit: number) {}

  get(key: K): V | undefined {
    return this.values.get(key);
  }

  /** Keeps `value` for `key` and returns it. */
  add(key: K, value: V): V {
    if (this.values.size >= this.limit) this.values.clear();
    this.values.set(key, value);
    return value;
  }
}
