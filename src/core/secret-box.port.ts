/**
 * Secrets kept at rest only sealed (docs/operations.md, "Secrets at rest"): a webhook's signing
 * secret is written to the log as a sealed string and opened where a delivery is signed.
 * Implementation: `src/core/aes-gcm-secret-box.ts`, its keys from `infra/files/data-keyring.ts`.
 */
export interface SecretBox {
  /**
   * Seals `plain` for `context` (what it belongs to, such as `webhook-secret:<account>`): only
   * `open` with the same context gives it back.
   */
  seal(plain: string, context: string): Promise<string>;
  /** The plain text of a sealed string; a string that is not sealed (written before sealing existed) is returned as it is. */
  open(value: string, context: string): Promise<string>;
}
