/**
 * Team helpers for HTTP-level tests: a member of an account with a given role, signed in with the
 * current account switched to it, as a person would (sign in, then the account switcher).
 */
import { randomUUID } from 'node:crypto';
import type { Role } from '../../src/domain/team/permissions.js';
import type { TestApp } from './app.js';
import { consolePost, signIn } from './console.js';

export interface TestMember {
  userId: string;
  email: string;
  password: string;
  role: Role;
  /** Session cookie, current account = the account the member was added to. */
  cookie: string;
}

const CLI = { actor: 'test', ip: null, host: 'test' };

/** A new user who is `role` in `accountId` (their own first account is a scratch one they own). */
export async function addMember(t: TestApp, accountId: string, role: Role): Promise<TestMember> {
  const email = `${role}-${randomUUID().slice(0, 8)}@example.com`;
  const password = `pw-${randomUUID()}`;
  let userId: string;
  if (role === 'owner' && !(await t.services.console.users.list(accountId)).length) {
    userId = (await t.services.console.users.create(accountId, email, password, CLI)).userId;
  } else {
    const scratch = await t.services.credits.createAccount(`scratch ${email}`, 0, CLI);
    userId = (await t.services.console.users.create(scratch.id, email, password, CLI)).userId;
    await t.services.console.team.join(accountId, { userId, email }, role, CLI);
  }
  const session = await signIn(t, email, password);
  if (!session.cookie) throw new Error(`sign-in failed: ${session.status}`);
  const switched = await consolePost(t, `/console/accounts/${accountId}/switch`, session.cookie, {});
  if (switched.status !== 303 && role !== 'owner') throw new Error(`switch failed: ${switched.status}`);
  return { userId, email, password, role, cookie: session.cookie };
}

/** Marks the user as having two-factor authentication on, as the Settings page's set-up stores it. */
export async function enableTwoFactor(t: TestApp, userId: string): Promise<void> {
  const { ObjectId } = await import('mongodb');
  await t.connection.db!.collection('console_users').updateOne({ _id: new ObjectId(userId) }, { $set: { 'totp.enabledAt': new Date() } });
}
