/**
 * What an API key may do. A key stores the list it was given; a key written before permissions existed
 * (no list) has every one. The operation catalog names the permission each operation needs.
 */
export const KEY_PERMISSIONS = ['lookup', 'generate', 'read', 'client_tokens', 'webhooks'] as const;

export type KeyPermission = (typeof KEY_PERMISSIONS)[number];

/** The console's label for each permission (the create and edit dialogs' checkboxes). */
export const KEY_PERMISSION_LABELS: Readonly<Record<KeyPermission, string>> = Object.freeze({
  lookup: 'Definitions',
  generate: 'Images',
  read: 'Read',
  client_tokens: 'Client tokens',
  webhooks: 'Webhooks',
});

export function isKeyPermission(value: unknown): value is KeyPermission {
  return typeof value === 'string' && (KEY_PERMISSIONS as readonly string[]).includes(value);
}

/** The permissions a stored key has: every one when it was stored without a list. */
export function effectiveKeyPermissions(stored: readonly KeyPermission[] | null | undefined): readonly KeyPermission[] {
  return stored ?? KEY_PERMISSIONS;
}
