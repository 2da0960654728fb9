import type { FastifyPluginAsync } from 'fastify';
import type { Action } from '../../domain/team/permissions.js';
import type { AuditLog } from '../../domain/audit/service.js';
import type { SessionService } from '../../domain/console/sessions.js';
import type { SignInService } from '../../domain/console/signin.js';
import type { CreditService } from '../../domain/credits/service.js';
import type { KeyManager } from '../../domain/keys/index.js';
import type { ClientTokens } from '../../domain/client-tokens/service.js';
import type { DefinitionService, ImageJobService, JobWatch } from '../../domain/ports.js';
import type { UsageService } from '../../domain/usage/service.js';
import type { Invitations } from '../../domain/team/invitations.js';
import type { TeamService } from '../../domain/team/members.js';
import type { WebhookEndpoints } from '../../domain/webhooks/endpoints.js';
import type { BillingService } from '../../domain/billing/service.js';
import type { PasswordService } from '../../domain/identity/password-reset.js';
import type { SignUpService } from '../../domain/identity/signup.js';
import type { TwoFactorService } from '../../domain/identity/two-factor.js';

/** Every service the console calls; each section is handed a `Pick<>` of the ones it uses. */
export interface ConsoleServices {
  definitions: DefinitionService;
  jobs: ImageJobService;
  keys: KeyManager;
  credits: Pick<CreditService, 'getAccount'>;
  audit: AuditLog;
  usage: Pick<UsageService, 'forAccount'>;
  jobWatch: JobWatch;
  sessions: SessionService;
  signIn: SignInService;
  /** The explorer's own client tokens. */
  clientTokens: Pick<ClientTokens, 'mintForConsole'>;
  billing: Pick<BillingService, 'overview' | 'startCheckout' | 'saveAutoRecharge' | 'buyingEnabled'>;
  /** Members, roles and the owners' settings of an account. */
  team: TeamService;
  invitations: Invitations;
  /** Self-serve sign-up and its verification link. */
  signUp: Pick<SignUpService, 'request' | 'verify'>;
  /** Password reset by email and change in Settings. */
  passwords: Pick<PasswordService, 'requestReset' | 'canReset' | 'reset' | 'change'>;
  /** The user's TOTP second factor (Settings). */
  twoFactor: Pick<TwoFactorService, 'status' | 'beginSetup' | 'pendingSetup' | 'enable' | 'disable'>;
  webhooks: Pick<WebhookEndpoints, 'create' | 'list' | 'delete' | 'recentDeliveries' | 'resend' | 'lowCreditsState' | 'setLowCreditsThreshold'>;
}

/** A console section: a Fastify plugin, registered under /console, given only what its routes call. */
export type ConsoleRoute<Deps extends object> = FastifyPluginAsync<Deps>;

/**
 * Route options of a page or action that needs a signed-in session whose role allows `action` (the
 * edge refuses the others with 403 before anything is read). test/console/role-matrix.test.ts walks
 * every state-changing route through every role.
 */
export function needs(action: Action) {
  return { config: { auth: 'session' as const, permission: action } };
}

/** Route options of a page any member may see. */
export const SESSION = needs('view');

/** Route options of the sign-in and sign-out doors, which also answer without a session. */
export const OPTIONAL_SESSION = { config: { auth: 'optional-session' as const } };
