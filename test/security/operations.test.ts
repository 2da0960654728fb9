/**
 * The operation catalog covers every door: each REST route an API key calls names an operation of the
 * catalog at that very method and path, each GraphQL root field is one, and the catalog lists nothing
 * the doors do not serve. A route or field added without its catalog row fails here (and at start-up).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATION_NAMES, OPERATIONS, type OperationName, type OperationSpec } from '../../src/domain/operations/catalog.js';
import { buildGraphQLSchema, rootFieldsOf } from '../../src/graphql/schema.js';
import { startTestApp, type TestApp } from '../helpers/app.js';

const routes: { method: string; url: string; auth: string | undefined; operation: string | undefined }[] = [];
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp({
    onRoute: (r) => {
      for (const method of [r.method].flat()) if (method !== 'HEAD') routes.push({ method, url: r.url, auth: r.auth, operation: r.operation });
    },
  });
});
afterAll(async () => {
  await t?.close();
});

const spec = (name: OperationName): OperationSpec => OPERATIONS[name];

describe('the operation catalog and the REST door', () => {
  it('every API-key route names the catalog operation listed for its method and path', () => {
    const apiRoutes = routes.filter((r) => r.auth === 'apiKey');
    expect(apiRoutes.length).toBeGreaterThan(0);
    for (const route of apiRoutes) {
      const at = `${route.method} ${route.url}`;
      expect(OPERATION_NAMES, at).toContain(route.operation);
      expect(spec(route.operation as OperationName).rest, at).toContain(at);
    }
  });

  it('every REST route of the catalog is served (all SERVICES on)', () => {
    const served = new Set(routes.filter((r) => r.auth === 'apiKey').map((r) => `${r.method} ${r.url}`));
    for (const name of OPERATION_NAMES) for (const at of spec(name).rest) expect(served, `${name}: ${at}`).toContain(at);
  });

  it('refuses to register an API-key route that names no operation', async () => {
    const other = await startTestApp({
      beforeListen: (app) => {
        expect(() => app.get('/api/unpriced', { config: { auth: 'apiKey' } }, async () => 'free for all')).toThrow(/operation of the catalog/);
      },
    });
    await other.close();
  });
});

describe('the operation catalog and the GraphQL door', () => {
  it('every root field is an operation of the catalog, under the same root type, and every catalogued field is served', async () => {
    const schema = await buildGraphQLSchema();
    const fields = rootFieldsOf(schema);
    const catalogued = OPERATION_NAMES.flatMap((name) => {
      const graphql = spec(name).graphql;
      return graphql ? [{ type: graphql.type, field: graphql.field }] : [];
    });
    expect(fields.length).toBeGreaterThan(0);
    expect([...fields].sort(byField)).toEqual([...catalogued].sort(byField));
  });
});

describe('the rows themselves', () => {
  it('charging operations have a price and count rate units; free ones cost nothing', () => {
    for (const name of OPERATION_NAMES) {
      const row = spec(name);
      if (row.charges) expect({ name, credits: row.credits > 0, rateUnits: row.rateUnits > 0 }).toEqual({ name, credits: true, rateUnits: true });
      else expect({ name, credits: row.credits }).toEqual({ name, credits: 0 });
    }
  });
});

function byField(a: { field: string }, b: { field: string }): number {
  return a.field.localeCompare(b.field);
}
