import { badRequest } from '../../src/core/errors.js';

const DATE = /^\d{4}-\d{2}-\d{2}$/;

/** A `YYYY-MM-DD` query parameter that is a real calendar date, or undefined. */
export function parseDateParam(name: string, value: string | undefined): string | undefined {
  if (value === undefined || value === '') return undefined;
  // An impossible date (2019-13-01) parses to an invalid Date: check it before formatting it.
  const parsed = new Date(`${value}T00:00:00Z`);
  if (!DATE.test(value) || Number.isNaN(parsed.getTime()) || parsed.toISOString().slice(0, 10) !== value) {
    throw badRequest(`${name} must be a date YYYY-MM-DD`, { errors: [{ parameter: name, message: 'must be a date YYYY-MM-DD' }] });
  }
  return value;
}
