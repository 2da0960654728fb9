/** Who is calling: the plain value every service receives instead of a request or a GraphQL context. */
export interface Principal {
  /** Account id, as a 24-hex ObjectId string. */
  readonly accountId: string;
  /** Id of the API key that authenticated the call, as a 24-hex ObjectId string. */
  readonly keyId: string;
}
