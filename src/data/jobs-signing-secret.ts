import { randomBytes } from 'node:crypto';
import type { Connection } from 'mongoose';

const SETTING_ID = 'image-url-signing-secret';

/**
 * The HMAC secret for image URLs when URL_SIGNING_SECRET is unset: created once, atomically (upsert with
 * $setOnInsert), in the `settings` collection, so every gateway instance signs and verifies alike.
 */
export async function loadOrCreateSigningSecret(connection: Connection): Promise<string> {
  const settings = connection.db!.collection<{ _id: string; value: string; createdAt: Date }>('settings');
  const doc = await settings.findOneAndUpdate(
    { _id: SETTING_ID },
    { $setOnInsert: { value: randomBytes(32).toString('base64url'), createdAt: new Date() } },
    { upsert: true, returnDocument: 'after' },
  );
  if (!doc?.value) throw new Error('could not load the image URL signing secret');
  return doc.value;
}
