import { hash, verify } from '@node-rs/argon2';
import type { PasswordHasher } from '../../domain/console/passwords.js';

/** OWASP's argon2id parameters: 19 MiB of memory, 2 iterations, 1 lane. */
// `algorithm: 2` is Algorithm.Argon2id (a const enum, which isolated modules cannot read).
const OPTIONS = { algorithm: 2, memoryCost: 19 * 1024, timeCost: 2, parallelism: 1 } as const;

/** argon2id through @node-rs/argon2 (prebuilt binaries; hashing runs off the event loop). */
export const argon2Hasher: PasswordHasher = {
  hash: (password) => hash(password, OPTIONS),
  async verify(stored, password) {
    try {
      return await verify(stored, password);
    } catch {
      // A malformed stored hash never signs anyone in.
      return false;
    }
  },
};
