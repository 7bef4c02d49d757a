import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, open, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { createTransport, type Transporter } from 'nodemailer';
import type { StreamSentMessageInfo } from 'nodemailer';
import type { Clock } from '../../src/core/clock.js';
import { MailError, type Mailer, type MailMessage } from '../../src/core/mail.port.js';
import { mailOptions } from './smtp.js';

export interface FileOutboxOptions {
  /** Where the `.eml` files go; created when missing. The container passes `<SCORES_DATA_DIR>/outbox`. */
  dir: string;
  /** The From header (`MAIL_FROM`). */
  from?: string;
  clock: Clock;
}

export const DEFAULT_OUTBOX_FROM = 'Scores API <alerts@localhost>';

/** File names are the message ids; anything that could leave the directory is refused. */
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/**
 * The embedded mail adapter: each message becomes `<dir>/<id>.eml`, a complete RFC 5322 message
 * (CRLF line ends, MIME headers, the body quoted-printable where needed), composed by nodemailer
 * exactly as the SMTP adapter would send it, so any mail client opens it.
 *
 * Written to a temporary file, flushed, then renamed into place: a reader never sees half a
 * message. Idempotent by id: a message whose file exists already is not written again.
 */
export class FileOutboxMailer implements Mailer {
  private readonly composer: Transporter<StreamSentMessageInfo>;
  private ready: Promise<void> | null = null;

  constructor(private readonly options: FileOutboxOptions) {
    this.composer = createTransport({ streamTransport: true, buffer: true, newline: 'windows' });
  }

  /** The file a message id is written to. */
  fileFor(id: string): string {
    return join(this.options.dir, `${id}.eml`);
  }

  async send(message: MailMessage): Promise<void> {
    if (!SAFE_ID.test(message.id)) throw new MailError(`mail id ${JSON.stringify(message.id)} cannot name a file`, message.id);
    const target = this.fileFor(message.id);
    const tmp = join(this.options.dir, `.${message.id}.${randomUUID()}.tmp`);
    try {
      await (this.ready ??= mkdir(this.options.dir, { recursive: true }).then(() => undefined));
      if (await exists(target)) return;
      const info = await this.composer.sendMail(mailOptions(message, this.options.from ?? DEFAULT_OUTBOX_FROM, this.options.clock.now()));
      const handle = await open(tmp, 'wx');
      try {
        await handle.writeFile(info.message as Buffer);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, target);
    } catch (err) {
      this.ready = null;
      await rm(tmp, { force: true });
      throw new MailError(`could not write mail ${message.id} to the outbox ${this.options.dir}: ${(err as Error).message}`, message.id, {
        cause: err,
      });
    }
  }

  async close(): Promise<void> {
    this.composer.close();
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path, constants.F_OK);
    return true;
  } catch {
    return false;
  }
}
