import { badRequest } from '../../src/core/errors.js';
import { isDateString } from '../../src/domain/trading-calendar.js';

/**
 * A `YYYY-MM-DD` query parameter that is a real calendar date, or undefined when absent. An empty
 * value (`start=`) is not a date and is refused like any other: the document says `format: date`,
 * and a client that meant "no bound" omits the parameter.
 */
export function parseDateParam(name: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (!isDateString(value)) {
    throw badRequest(`${name} must be a date YYYY-MM-DD`, { errors: [{ parameter: name, message: 'must be a date YYYY-MM-DD' }] });
  }
  return value;
}
