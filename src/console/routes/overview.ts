import { utcDay } from '../../domain/usage/types.js';
import { balanceOf, callerOf, pageContext } from '../context.js';
import { sendHtml } from '../render.js';
import { overviewPage } from '../views/overview.js';
import { SESSION, type ConsoleRoute, type ConsoleServices } from './types.js';

/**
 * The overview: balance (warned below `lowBalance`, with the way to more credits: Billing when
 * `buyingEnabled`, else the CLI) and the last 30 days of spending.
 */
const overviewRoutes: ConsoleRoute<Pick<ConsoleServices, 'credits' | 'usage'> & { lowBalance: number; buyingEnabled: boolean }> = async (app, s) => {
  app.get('/', SESSION, async (request, reply) => {
    const caller = callerOf(request);
    const to = utcDay(new Date());
    const from = utcDay(to, -29);
    const [credits, usage] = await Promise.all([balanceOf(s.credits, request), s.usage.forAccount(caller.principal.accountId, { from, to })]);
    return sendHtml(reply, overviewPage(pageContext(request, '/console'), { credits, lowBalance: s.lowBalance, buyingEnabled: s.buyingEnabled, usage, from, to }));
  });
};

export default overviewRoutes;
