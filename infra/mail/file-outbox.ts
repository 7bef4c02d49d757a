import { randomUUID } from 'node:crypto';
import { constants } from 'node:fs';
import { access, mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { PRIVATE_DIR, PRIVATE_FILE } from '../../src/core/private-files.js';
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
  /** Told of each message once its file is in place (the console line of a server without SMTP). */
  onWritten?(file: string, message: MailMessage): void;
}

export const DEFAULT_OUTBOX_FROM = 'Scores API <alerts@localhost>';

/** File names are the message ids; anything that could leave the directory is refused. */
const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/**
 * The embedded mail adapter: each message becomes `<dir>/<id>.eml`, a complete RFC 5322 message
 * (CRLF line ends, MIME headers) with the headers nodemailer composes for the SMTP adapter, so any
 * mail client opens it. The body is written as it is (7bit or 8bit) rather than quoted-printable:
 * the file is also read with `cat` or an editor, where quoted-printable's soft line breaks (`=`
 * at column 76) split a sign-in link in two.
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
      await (this.ready ??= mkdir(this.options.dir, { recursive: true, mode: PRIVATE_DIR }).then(() => undefined));
      if (await exists(target)) return;
      const info = await this.composer.sendMail(mailOptions(message, this.options.from ?? DEFAULT_OUTBOX_FROM, this.options.clock.now()));
      // Owner-only: a mail may hold a live sign-in link.
      const handle = await open(tmp, 'wx', PRIVATE_FILE);
      try {
        await handle.writeFile(unencodedBody(info.message as Buffer, message.text));
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, target);
      this.options.onWritten?.(target, message);
    } catch (err) {
      this.ready = null;
      await rm(tmp, { force: true });
      throw new MailError(`could not write mail ${message.id} to the outbox ${this.options.dir}: ${(err as Error).message}`, message.id, {
        cause: err,
      });
    }
  }

  /** Deletes the `.eml` files addressed to `address` (its To header, as nodemailer writes it). */
  async forgetRecipient(address: string): Promise<number> {
    const names = await readdir(this.options.dir).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? [] : Promise.reject(err)));
    const to = new RegExp(`^To: (?:.*[<\\s,])?${address.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:[>\\s,]|$)`, 'im');
    let removed = 0;
    for (const name of names.filter((n) => n.endsWith('.eml'))) {
      const file = join(this.options.dir, name);
      const head = (await readFile(file, 'utf8')).split('\r\n\r\n', 1)[0] ?? '';
      if (!to.test(head)) continue;
      await rm(file, { force: true });
      removed++;
    }
    return removed;
  }

  async close(): Promise<void> {
    this.composer.close();
  }
}

/** RFC 5322's limit on a line, CRLF excluded. */
const MAX_LINE_OCTETS = 998;

/**
 * The composed single-part message with its quoted-printable body replaced by the text itself
 * (CRLF line ends, `Content-Transfer-Encoding` 7bit for ASCII, else 8bit). A message that is not
 * a quoted-printable text/plain part, or a line longer than RFC 5322 allows, stays as composed.
 */
export function unencodedBody(composed: Buffer, text: string): Buffer {
  const raw = composed.toString('latin1');
  const split = raw.indexOf('\r\n\r\n');
  if (split < 0) return composed;
  const head = raw.slice(0, split);
  if (!/^Content-Type: text\/plain; charset=utf-8$/im.test(head) || !/^Content-Transfer-Encoding: quoted-printable$/im.test(head)) return composed;
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  if (lines.some((l) => Buffer.byteLength(l, 'utf8') > MAX_LINE_OCTETS)) return composed;
  const ascii = /^[\x20-\x7e\t\n]*$/.test(text);
  const headers = head.replace(/^Content-Transfer-Encoding: quoted-printable$/im, `Content-Transfer-Encoding: ${ascii ? '7bit' : '8bit'}`);
  return Buffer.concat([Buffer.from(`${headers}\r\n\r\n`, 'latin1'), Buffer.from(`${lines.join('\r\n')}\r\n`, 'utf8')]);
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path, constants.F_OK);
    return true;
  } catch {
    return false;
  }
}
