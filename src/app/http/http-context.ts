import type { Express, Request } from 'express';
import type { Ids } from '../../core/ids.port.js';
import type { Meter } from '../../web/meter.port.js';
import type { QueryContext } from '../../../queries/shared/query-context.js';
import type { CommandContext } from '../../../commands/shared/command-context.js';
import type { FreeAnswerBytes } from '../metering/free-answer-bytes.js';

/**
 * What tsoa's hooks need of the app that received a request. tsoa calls its security hook and its
 * ioc factory as module functions, shared by every app of the process (tests run several at
 * once), so the request's app is their only way to it: this context is the one thing it carries.
 */
export interface HttpContext {
  /** What the read side's controllers are built with. */
  queries: QueryContext;
  /** What the write side's controllers are built with (those whose class declares `context = 'commands'`). */
  commands: CommandContext;
  meter: Meter;
  /** The accounts' budgets of free answers' bytes (the security hook marks a free call's response for them). */
  freeAnswers: FreeAnswerBytes;
  ids: Ids;
  /** The query parameters each /v1 route declares, by express path (`/v1/scores/:ticker`). */
  queryParams: ReadonlyMap<string, ReadonlySet<string>>;
}

const SLOT = 'httpContext';

export function provideHttpContext(app: Express, ctx: HttpContext): void {
  app.locals[SLOT] = ctx;
}

export function httpContextOf(req: Request): HttpContext {
  const ctx = req.app.locals[SLOT] as HttpContext | undefined;
  if (!ctx) throw new Error('request reached a tsoa hook of an app without its HTTP context');
  return ctx;
}
