import { badRequest } from '../../src/core/errors.js';

/**
 * 400 when both dates were sent in the wrong order. Only the dates as sent: clamping to the
 * caller's window never refuses (spec, Errors rule 3), it may leave an empty window.
 */
export function requireOrderedDates(start: string | undefined, end: string | undefined): void {
  if (start !== undefined && end !== undefined && start > end) {
    throw badRequest(`start (${start}) is after end (${end})`, { errors: [{ parameter: 'start', message: 'must not be after end' }] });
  }
}
