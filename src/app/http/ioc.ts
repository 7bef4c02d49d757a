import type { IocContainer, IocContainerFactory, ServiceIdentifier } from '@tsoa/runtime';
import type { Request } from 'express';
import type { Services } from '../container.js';

/**
 * tsoa builds a controller per request through this factory, passing the services of the app
 * that received the request (no module-level singletons: tests run several apps at once).
 */
export const iocContainer: IocContainerFactory<Request> = (request: Request): IocContainer => {
  const services = request.app.locals['services'] as Services;
  const get = <T>(controller: ServiceIdentifier<T>): T => {
    if (typeof controller !== 'function') throw new Error(`cannot build ${String(controller)}`);
    const Ctor = controller as new (s: Services) => T;
    return new Ctor(services);
  };
  return { get };
};
