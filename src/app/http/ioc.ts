import type { IocContainer, IocContainerFactory, ServiceIdentifier } from '@tsoa/runtime';
import type { Request } from 'express';
import type { QueryContext } from '../../../queries/shared/query-context.js';
import type { CommandContext } from '../../../commands/shared/command-context.js';
import { httpContextOf } from './http-context.js';

/**
 * How a controller class says what it is built with: a write-side controller declares
 * `static readonly context = 'commands'` and gets the `CommandContext`; every other controller
 * (the read side) gets the `QueryContext`.
 */
type ControllerClass<T> = (new (ctx: QueryContext) => T) | ((new (ctx: CommandContext) => T) & { readonly context: 'commands' });

const isCommandController = <T>(c: ControllerClass<T>): c is (new (ctx: CommandContext) => T) & { readonly context: 'commands' } =>
  (c as { context?: unknown }).context === 'commands';

/**
 * tsoa builds a controller per request through this factory, passing the context of the app that
 * received the request (no module-level singletons: tests run several apps at once).
 */
export const iocContainer: IocContainerFactory<Request> = (request: Request): IocContainer => {
  const { queries, commands } = httpContextOf(request);
  const get = <T>(controller: ServiceIdentifier<T>): T => {
    if (typeof controller !== 'function') throw new Error(`cannot build ${String(controller)}`);
    const Ctor = controller as ControllerClass<T>;
    return isCommandController(Ctor) ? new Ctor(commands) : new Ctor(queries);
  };
  return { get };
};
