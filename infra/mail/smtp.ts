import { createTransport, type SendMailOptions, type Transporter } from 'nodemailer';
import addressparser from 'nodemailer/lib/addressparser';
import type { Clock } from '../../src/core/clock.js';
import { MailError, type Mailer, type MailMessage } from '../../src/core/mail.port.js';

export interface SmtpMailerOptions {
  /** nodemailer connection URL, e.g. `smtps://user:pass@smtp.example.com:465` (`SMTP_URL`). */
  url: string;
  /** Sender, e.g. `Scores API <alerts@example.com>` (`MAIL_FROM`); its domain names the Message-ID. */
  from: string;
  clock: Clock;
}

/** Sends through an SMTP server. A retried id carries the same Message-ID, so receivers can tell. */
export class SmtpMailer implements Mailer {
  private readonly transport: Transporter;

  constructor(private readonly options: SmtpMailerOptions) {
    this.transport = createTransport(options.url);
  }

  async send(message: MailMessage): Promise<void> {
    try {
      await this.transport.sendMail(mailOptions(message, this.options.from, this.options.clock.now()));
    } catch (err) {
      const e = err as { message?: string; code?: string; responseCode?: number };
      const reason = [e.code, e.responseCode].filter((x) => x !== undefined).join(' ');
      throw new MailError(`SMTP refused mail ${message.id} to ${message.to}${reason ? ` (${reason})` : ''}: ${e.message ?? String(err)}`, message.id, {
        cause: err,
      });
    }
  }

  async forgetRecipient(): Promise<number> {
    // Handed to the SMTP server: nothing of it is kept here.
    return 0;
  }

  async close(): Promise<void> {
    this.transport.close();
  }
}

/** `<id@domain-of-from>`: the same id always gives the same Message-ID. */
export function messageIdFor(id: string, from: string): string {
  const [first] = addressparser(from, { flatten: true });
  const domain = first?.address?.split('@')[1]?.trim() || 'localhost';
  return `<${id}@${domain}>`;
}

/** The one message shape both adapters send, so the file outbox shows exactly what SMTP would. */
export function mailOptions(message: MailMessage, from: string, date: Date): SendMailOptions {
  return {
    from,
    to: message.to,
    subject: message.subject,
    text: message.text,
    date,
    messageId: messageIdFor(message.id, from),
    headers: { 'X-Scores-Mail-Id': message.id },
  };
}
