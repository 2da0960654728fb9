import { mkdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ImageKey, ImageStore, StoredImage, StoredImageInfo } from './types.js';
import { etagOf, objectName, parseObjectName } from './names.js';

export const FS_PREFIX = 'fs:';

/**
 * Images as files under one directory (IMAGE_STORE=fs): no bytes in the database, so the embedded
 * server's memory stays flat. Every gateway and worker must see the same directory.
 */
export class FsImageStore implements ImageStore {
  constructor(private readonly dir: string) {}

  async put(key: ImageKey, image: { data: Buffer; contentType: string }): Promise<StoredImageInfo> {
    const name = objectName(key, image);
    const path = join(this.dir, name);
    await mkdir(dirname(path), { recursive: true });
    // Written aside and renamed: a reader never sees half a file, a crash leaves no torn one.
    const partial = `${path}.${process.pid}.partial`;
    await writeFile(partial, image.data);
    await rename(partial, path);
    return { fileId: FS_PREFIX + name, contentType: image.contentType, length: image.data.length, etag: etagOf(image.data) };
  }

  async stat(fileId: string): Promise<StoredImageInfo | null> {
    const path = this.pathOf(fileId);
    const named = path && parseObjectName(fileId.slice(FS_PREFIX.length));
    if (!path || !named) return null;
    try {
      const s = await stat(path);
      return { fileId, length: s.size, ...named };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async get(fileId: string): Promise<StoredImage | null> {
    const path = this.pathOf(fileId);
    const named = path && parseObjectName(fileId.slice(FS_PREFIX.length));
    if (!path || !named) return null;
    try {
      const data = await readFile(path);
      return { fileId, length: data.length, data, ...named };
    } catch (err) {
      if (isMissing(err)) return null;
      throw err;
    }
  }

  async delete(fileId: string): Promise<void> {
    const path = this.pathOf(fileId);
    if (!path) return;
    await unlink(path).catch((err: unknown) => {
      if (!isMissing(err)) throw err;
    });
  }

  private pathOf(fileId: string): string | null {
    if (!fileId.startsWith(FS_PREFIX)) return null;
    const name = fileId.slice(FS_PREFIX.length);
    return parseObjectName(name) ? join(this.dir, name) : null;
  }
}

function isMissing(err: unknown): boolean {
  return (err as NodeJS.ErrnoException)?.code === 'ENOENT';
}
