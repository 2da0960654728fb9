import type { FastifyReply, FastifyRequest } from 'fastify';
import QRCode from 'qrcode';
import { callerOf, clientMeta, pageContext } from '../context.js';
import { fieldError } from '../form-errors.js';
import { queryParam } from '../query.js';
import { sendHtml } from '../render.js';
import { settingsPage, type SettingsView } from '../views/settings.js';
import { recoveryCodesPage, twoFactorSection, twoFactorSetupPage } from '../views/two-factor.js';
import { needs, SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

const NOTICES: Record<string, string> = {
  password: 'Your password is changed. Your other sessions were signed out.',
  '2fa-off': 'Two-factor authentication is off.',
};

/** Settings: the user's password, and their TOTP second factor (set up, enable with a code, disable). */
const settingsRoutes: ConsoleRoute<Pick<ConsoleServices, 'passwords' | 'twoFactor'>> = async (app, s) => {
  const render = async (request: FastifyRequest, reply: FastifyReply, view: SettingsView & { twoFactorError?: string }) => {
    const ctx = pageContext(request, '/console/settings');
    const status = await s.twoFactor.status(callerOf(request).principal.userId);
    return sendHtml(reply, settingsPage(ctx, { ...view, twoFactor: twoFactorSection(ctx, status, view.twoFactorError) }));
  };

  app.get('/settings', SESSION, async (request, reply) => {
    const done = queryParam(request, 'done');
    return render(request, reply, { notice: done ? NOTICES[done] : undefined });
  });

  app.post<{ Body: { currentPassword?: unknown; newPassword?: unknown } }>('/settings/password', needs('self'), async (request, reply) => {
    let result;
    try {
      result = await s.passwords.change(callerOf(request), request.body?.currentPassword, request.body?.newPassword, clientMeta(request));
    } catch (err) {
      const passwordError = fieldError(err);
      reply.code(400);
      return render(request, reply, { passwordError });
    }
    if (!result.ok) {
      reply.code(400);
      return render(request, reply, { passwordError: 'Current password is incorrect' });
    }
    return reply.code(303).header('location', '/console/settings?done=password').send();
  });

  app.post('/settings/two-factor/setup', needs('self'), async (request, reply) => {
    await s.twoFactor.beginSetup(callerOf(request));
    return reply.code(303).header('location', '/console/settings/two-factor').send();
  });

  app.get('/settings/two-factor', SESSION, async (request, reply) => {
    const setup = await s.twoFactor.pendingSetup(callerOf(request));
    if (!setup) return reply.code(303).header('location', '/console/settings').send();
    return sendHtml(reply, twoFactorSetupPage(pageContext(request, '/console/settings'), { secret: setup.secret, qrDataUrl: await qrCode(setup.uri) }));
  });

  app.post<{ Body: { code?: unknown } }>('/settings/two-factor/enable', needs('self'), async (request, reply) => {
    const caller = callerOf(request);
    const result = await s.twoFactor.enable(caller, request.body?.code, clientMeta(request));
    const ctx = pageContext(request, '/console/settings');
    if (result.ok) return sendHtml(reply, recoveryCodesPage(ctx, result.recoveryCodes));
    const setup = result.reason === 'wrong_code' ? await s.twoFactor.pendingSetup(caller) : null;
    if (!setup) return reply.code(303).header('location', '/console/settings').send();
    reply.code(400);
    const error = 'That code is not right: enter the code your app shows now (its clock must be right).';
    return sendHtml(reply, twoFactorSetupPage(ctx, { secret: setup.secret, qrDataUrl: await qrCode(setup.uri), error }));
  });

  app.post<{ Body: { password?: unknown } }>('/settings/two-factor/disable', needs('self'), async (request, reply) => {
    const result = await s.twoFactor.disable(callerOf(request), request.body?.password, clientMeta(request));
    if (result.ok || result.reason === 'not_enabled') return reply.code(303).header('location', '/console/settings?done=2fa-off').send();
    reply.code(400);
    return render(request, reply, { twoFactorError: 'Current password is incorrect' });
  });
};

export default settingsRoutes;

/** The QR code, drawn here (never by a third party): a PNG data: URL, which the console's CSP allows. */
function qrCode(uri: string): Promise<string> {
  return QRCode.toDataURL(uri, { errorCorrectionLevel: 'M', margin: 1, width: 200 });
}
