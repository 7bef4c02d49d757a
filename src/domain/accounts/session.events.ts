/**
 * Sign-in and session events: the account page's front door. Only SHA-256 hashes of the link's
 * token and of the session id name the streams; the clear values exist only in the email and in
 * the browser's cookie.
 * - `signin-<sha256(token)>`: `SignInLinkSent`, then at most one `SignInLinkUsed` (appended at
 *   revision 0: a link signs in once).
 * - `email-<sha256(address)>`: `EmailClaimed`, the one account of an address (appended to no
 *   stream: two first sign-ins with one address make one account).
 * - `session-<sha256(session id)>`: `SessionStarted`, then `SessionEnded` at sign-out.
 */
export const signInStream = (tokenHash: string) => `signin-${tokenHash}`;
export const emailStream = (emailHash: string) => `email-${emailHash}`;
export const sessionStream = (sessionHash: string) => `session-${sessionHash}`;

export interface SignInLinkSent {
  type: 'SignInLinkSent';
  data: { email: string; expires_at: string; at: string };
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
export interface SessionStarted {
  type: 'SessionStarted';
  data: { account_id: string; expires_at: string; at: string };
}
export interface SessionEnded {
  type: 'SessionEnded';
  data: { reason: 'signed_out'; at: string };
}

export type SessionEvent = SignInLinkSent | SignInLinkUsed | EmailClaimed | SessionStarted | SessionEnded;
