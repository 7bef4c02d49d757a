import type { IocContainer, IocContainerFactory, ServiceIdentifier } from '@tsoa/runtime';
import type { Request } from 'express';
import type { QueryContext } from '../../../queries/shared/query-context.js';
import { httpContextOf } from './http-context.js';

/**
 * tsoa builds a controller per request through this factory, passing the query context of the app
 * that received the request (no module-level singletons: tests run several apps at once).
 */
export const iocContainer: IocContainerFactory<Request> = (request: Request): IocContainer => {
  const { queries } = httpContextOf(request);
  const get = <T>(controller: ServiceIdentifier<T>): T => {
    if (typeof controller !== 'function') throw new Error(`cannot build ${String(controller)}`);
    const Ctor = controller as new (ctx: QueryContext) => T;
    return new Ctor(queries);
  };
  return { get };
};
