import { createHash } from 'node:crypto';
import type { ImageKey } from './types.js';

/** The strong validator of a stored image: derived from its bytes (the same form GridFS entries carry). */
export function etagOf(data: Buffer): string {
  return `"${hashOf(data)}"`;
}

function hashOf(data: Buffer): string {
  return createHash('sha256').update(data).digest('base64url').slice(0, 27);
}

const EXTENSIONS: Record<string, string> = { 'image/png': 'png', 'image/webp': 'webp', 'image/jpeg': 'jpg' };
const TYPES: Record<string, string> = { png: 'image/png', webp: 'image/webp', jpg: 'image/jpeg' };

/**
 * The name of an image in a file or object store: `<jobId>/<index>-<attempt>-<hash>.<ext>`. It carries
 * what `stat` must answer (type, validator), so a store needs no metadata beside the bytes.
 */
export function objectName(key: ImageKey, image: { data: Buffer; contentType: string }): string {
  const ext = EXTENSIONS[image.contentType] ?? 'bin';
  return `${key.jobId}/${key.index}-${key.attempt}-${hashOf(image.data)}.${ext}`;
}

const NAME = /^([0-9a-f-]{36})\/(\d{1,6})-(\d{1,6})-([A-Za-z0-9_-]{27})\.(png|webp|jpg|bin)$/;

/** What a name says, or null for anything that is not one (so no id can reach outside the store). */
export function parseObjectName(name: string): { contentType: string; etag: string } | null {
  const m = NAME.exec(name);
  if (!m) return null;
  return { contentType: TYPES[m[5]!] ?? 'application/octet-stream', etag: `"${m[4]}"` };
}
