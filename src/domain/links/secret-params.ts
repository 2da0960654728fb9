/**
 * The query parameters that carry bearer secrets, one list: every link that puts a secret in its URL
 * names its parameter from here, and every log line writes these parameters' values as `[redacted]`
 * (src/edge/request-log.ts). Whoever reads the logs must not be able to open someone's reset link,
 * join an account through an invitation, or fetch a signed image.
 */

/** The token of an emailed link: email verification, password reset, invitation. */
export const LINK_TOKEN_PARAM = 'token';
/** The signature of a signed image URL. */
export const SIGNATURE_PARAM = 'sig';

export const SECRET_QUERY_PARAMS: readonly string[] = [LINK_TOKEN_PARAM, SIGNATURE_PARAM];
