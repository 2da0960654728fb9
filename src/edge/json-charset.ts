/**
 * JSON bodies are UTF-8 (RFC 8259 §8.1). Fastify reads every `application/json` body as UTF-8 whatever
 * its charset says, so a UTF-16 body failed as "not JSON" and a Latin-1 one was read with its accents
 * mangled (and charged). A charset other than UTF-8 or its subset US-ASCII is refused with 415 before
 * the body is read; after authentication, as every other body check.
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../domain/errors.js';

const ACCEPTED = new Set(['utf-8', 'utf8', 'us-ascii']);

/** The charset parameters of a Content-Type header, lower-cased and unquoted. */
function charsetsOf(contentType: string): string[] {
  return [...contentType.matchAll(/;\s*charset\s*=\s*(?:"([^"]*)"|([^;\s]*))/gi)].map((m) => (m[1] ?? m[2] ?? '').toLowerCase());
}

export function registerJsonCharsetCheck(app: FastifyInstance): void {
  app.addHook('preParsing', async function checkJsonCharset(request) {
    const contentType = request.headers['content-type'];
    // No parameters, no charset (what nearly every client sends): the regular expressions are skipped.
    if (typeof contentType !== 'string' || !contentType.includes(';') || !/^\s*application\/json\s*(;|$)/i.test(contentType)) return;
    if (charsetsOf(contentType).some((c) => !ACCEPTED.has(c))) {
      throw new AppError('unsupported_media_type', { message: 'Content-Type must be application/json (charset utf-8)' });
    }
  });
}
