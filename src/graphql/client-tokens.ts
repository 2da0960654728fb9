import { hostname } from 'node:os';
import { Arg, Authorized, Ctx, Field, Int, Mutation, ObjectType, Resolver, registerEnumType } from 'type-graphql';
import { AppError } from '../domain/errors.js';
import { CLIENT_SCOPES, type ClientScope } from '../domain/client-tokens/scopes.js';
import { MAX_TOKEN_ORIGINS, TOKEN_TTL } from '../domain/client-tokens/request.js';
import type { GraphQLContext } from './context.js';
import { DateTimeScalar } from './types.js';

export const ClientScopeEnum = Object.fromEntries(CLIENT_SCOPES.map((s) => [s, s])) as { [K in ClientScope]: K };
registerEnumType(ClientScopeEnum, {
  name: 'ClientScope',
  description: 'What a client token may do.',
  valuesConfig: {
    lookup: { description: 'The `lookup` mutation (charges 1 credit).' },
    generate: { description: 'The `generate` mutation (charges 1 credit per prompt).' },
    read: { description: 'Reading: `me`, `job`, `jobs` and the `jobStatus` subscription.' },
  },
});

@ObjectType('ClientToken', { description: 'A short-lived credential for a browser app, shown once. Send it as `Authorization: Bearer wi_tok_…` from one of its origins.' })
export class ClientTokenType {
  @Field(() => String, { description: 'The token (`wi_tok_` + 64 hex characters). Shown once; only a hash is stored.' })
  token!: string;

  @Field(() => DateTimeScalar, { description: 'When the token stops working (UNAUTHENTICATED, `client_token_expired`).' })
  expiresAt!: Date;

  @Field(() => [String], { description: 'The web origins the token may be used from (the request\'s `Origin`).' })
  origins!: string[];

  @Field(() => [ClientScopeEnum], { description: 'What the token may do.' })
  scopes!: ClientScope[];

  @Field(() => Int, { nullable: true, description: 'The most credits the token may spend in total; null: no cap beyond the balance.' })
  maxCredits!: number | null;

  @Field(() => Boolean, { description: 'Only operations registered for the account (`PUT /api/graphql/documents`) run with it.' })
  trustedDocumentsOnly!: boolean;
}

@Resolver()
export class ClientTokenResolver {
  @Authorized()
  @Mutation(() => ClientTokenType, {
    description: `Mints a client token for a browser app. API keys only (a client token gets FORBIDDEN, \`api_key_required\`); costs nothing; audited.`,
  })
  async createClientToken(
    @Arg('origins', () => [String], { description: `1 to ${MAX_TOKEN_ORIGINS} exact web origins, e.g. \`https://app.example.com\` or \`http://localhost:5173\` (scheme, host, optional port; no path).` })
    origins: string[],
    @Arg('scopes', () => [ClientScopeEnum], { nullable: true, description: 'What the token may do; default: all of lookup, generate and read.' })
    scopes: ClientScope[] | null | undefined,
    @Arg('ttlSeconds', () => Int, { nullable: true, description: `Lifetime in seconds, ${TOKEN_TTL.min} to ${TOKEN_TTL.max}; default ${TOKEN_TTL.default}.` })
    ttlSeconds: number | null | undefined,
    @Arg('maxCredits', () => Int, { nullable: true, description: 'Optional cap: the most credits the token may spend in total (a positive integer).' })
    maxCredits: number | null | undefined,
    @Arg('trustedDocumentsOnly', () => Boolean, { nullable: true, description: 'Only operations registered with `PUT /api/graphql/documents` may run with the token (FORBIDDEN, `document_not_trusted`, otherwise); default false.' })
    trustedDocumentsOnly: boolean | null | undefined,
    @Ctx() ctx: GraphQLContext,
  ): Promise<ClientTokenType> {
    const tokens = ctx.services.tokens;
    if (!tokens) throw new AppError('route_not_found');
    return tokens.mint(ctx.principal, { origins, scopes, ttlSeconds, maxCredits, trustedDocumentsOnly }, { actor: `key:${ctx.principal.keyId}`, ip: ctx.ip, host: HOST });
  }
}

const HOST = hostname();
