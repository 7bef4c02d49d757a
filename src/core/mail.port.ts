/**
 * Mail port: hands one plain-text email to whatever delivers it.
 * Adapters: infra/mail/file-outbox.ts (embedded default: one `.eml` file per message),
 * infra/mail/smtp.ts (an SMTP server via nodemailer).
 */

export interface MailMessage {
  /**
   * Idempotency key, stable across retries of the same message (a usage alert's event id).
   * An adapter delivers a given id at most once where it can (the file outbox) and otherwise
   * derives the `Message-ID` from it, so that a retried send is recognisable as the same mail.
   */
  id: string;
  /** One recipient address. */
  to: string;
  subject: string;
  /** Plain-text body, lines separated by `\n`. */
  text: string;
}

export interface Mailer {
  /** Resolves once the message is accepted for delivery; rejects with a MailError otherwise. */
  send(message: MailMessage): Promise<void>;
  /**
   * Removes every message this adapter keeps that was sent to `address` (a forgotten account's
   * mails); answers how many. An adapter that keeps nothing (SMTP: the mail is the recipient's) answers 0.
   */
  forgetRecipient(address: string): Promise<number>;
  /** Releases connections; no `send` after it. */
  close(): Promise<void>;
}

/** A message the adapter could not hand over. The caller keeps it and tries again later. */
export class MailError extends Error {
  constructor(
    message: string,
    /** The message id the failure is about. */
    readonly messageId: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'MailError';
  }
}
