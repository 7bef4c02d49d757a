/**
 * Sign-in and session events: the account page's front door. Only SHA-256 hashes of the link's
 * token and of the session id name the streams; the clear values exist only in the email and in
 * the browser's cookie.
 * - `signin-<sha256(token)>`: `SignInLinkSent`, then at most one `SignInLinkUsed` (appended at
 *   revision 0: a link signs in once).
 * - `email-<sha256(address)>`: `EmailClaimed`, the one account of an address (appended to no
 *   stream: two first links asked for one address name one account), and `EmailReleased` when
 *   that account is forgotten (the address may then open a new account).
 *
 * Addresses are written sealed under the key of the account they name (src/core/personal-data.port.ts):
 * the first link asked for an address claims it for a new account id at once, so that the link,
 * the claim and the account it creates are all sealed under one key, destroyed when it is forgotten.
 * - `session-<sha256(session id)>`: `SessionStarted`, then `SessionEnded` at sign-out.
 */
export const signInStream = (tokenHash: string) => `signin-${tokenHash}`;
export const emailStream = (emailHash: string) => `email-${emailHash}`;
export const sessionStream = (sessionHash: string) => `session-${sessionHash}`;

/**
 * `account_id`: the account the link opens (made by its first use when it does not exist yet);
 * absent from links sent before addresses were sealed, which no longer sign in.
 */
export interface SignInLinkSent {
  type: 'SignInLinkSent';
  data: { email: string; account_id?: string; expires_at: string; at: string };
}
export interface SignInLinkUsed {
  type: 'SignInLinkUsed';
  /** `created` when this sign-in created the account (and its first key). */
  data: { account_id: string; created: boolean; at: string };
}
export interface EmailClaimed {
  type: 'EmailClaimed';
  data: { email: string; account_id: string; at: string };
}
/** The address's account was forgotten: its next sign-in opens a new account. */
export interface EmailReleased {
  type: 'EmailReleased';
  data: { account_id: string; at: string };
}
export interface SessionStarted {
  type: 'SessionStarted';
  data: { account_id: string; expires_at: string; at: string };
}
export interface SessionEnded {
  type: 'SessionEnded';
  data: { reason: 'signed_out'; at: string };
}

export type SessionEvent = SignInLinkSent | SignInLinkUsed | EmailClaimed | EmailReleased | SessionStarted | SessionEnded;
