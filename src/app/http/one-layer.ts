import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Several middlewares that every request passes, run in order as one layer of express's router.
 * Each layer costs a request the router's own bookkeeping (the path parsed and matched again, a
 * match object, a parameter-processing closure): for the few that run on every call, one layer
 * instead of several was measurable on the metered path (docs/benchmarks.md, "The metered path").
 * A handler ends the chain as in express: by answering, or by calling `next` with an error (which
 * goes to the app's error handler); a throw or a rejected promise counts as such an error.
 */
export function oneLayer(...handlers: readonly RequestHandler[]): RequestHandler {
  return (req: Request, res: Response, next: NextFunction): void => {
    let i = 0;
    const step = (err?: unknown): void => {
      // Outside a route, express's router takes `next('route')` as a plain `next()`; `'router'`
      // and errors go on to the router, which leaves it or calls the error handlers.
      if (err && err !== 'route') return next(err);
      const handler = handlers[i++];
      if (!handler) return next();
      try {
        const result = handler(req, res, step);
        // As express's own layers: a promise rejected without a reason is still an error.
        if (result instanceof Promise) result.catch((error: unknown) => next(error || new Error('Rejected promise')));
      } catch (error) {
        next(error);
      }
    };
    step();
  };
}
