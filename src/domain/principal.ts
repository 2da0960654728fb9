/** Who is calling: the plain value every service receives instead of a request or a GraphQL context. */
export interface Principal {
  /** Account id, as a 24-hex ObjectId string. */
  readonly accountId: string;
  /** Id of the API key that authenticated the call; null when a signed-in console user acts (the playground). */
  readonly keyId: string | null;
  /** The console user acting, when the call comes from the console. */
  readonly userId?: string;
}

/** A caller authenticated by an API key (REST, GraphQL). */
export interface KeyPrincipal extends Principal {
  readonly keyId: string;
}

/** Where a call came from, as usage and audit record it: the key id, or `console`. */
export type CallSource = string;

export function sourceOf(principal: Principal): CallSource {
  return principal.keyId ?? 'console';
}
