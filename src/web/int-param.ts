import { AppError, badRequest } from '../core/errors.js';

export interface IntParamRule {
  default: number;
  min: number;
  max: number;
  /**
   * What a value above `max` is: `limit_exceeded` (422, the spec's rule for `limit` and `days`)
   * or `bad_request` (400, for a value that is simply out of range, such as a score above 100).
   */
  aboveMax?: 'limit_exceeded' | 'bad_request';
}

const INTEGER = /^[+-]?\d+$/;

/**
 * An integer query parameter, parsed here rather than by tsoa so that "abc", "1.5" and "" get one
 * clear 400 naming the parameter, and a value above the maximum gets the spec's 422. Absent → the
 * default; sent empty (`?limit=`) is no integer, as the document's `type: integer` says: refused
 * like an empty date.
 */
export function parseIntParam(name: string, value: string | undefined, rule: IntParamRule): number {
  if (value === undefined) return rule.default;
  if (value === '') throw invalid(name, 'is empty; omit it for the default');
  const text = value.trim();
  if (!INTEGER.test(text)) throw invalid(name, `must be an integer (got "${value.slice(0, 40)}")`);
  const n = Number(text);
  if (n < rule.min) throw invalid(name, `must be at least ${rule.min}`);
  if (n > rule.max) {
    const message = `must be at most ${rule.max}`;
    if ((rule.aboveMax ?? 'limit_exceeded') === 'bad_request') throw invalid(name, message);
    throw new AppError('limit_exceeded', `${name} ${message} (got ${text})`, {
      errors: [{ parameter: name, message }],
      maximum: rule.max,
    });
  }
  return n;
}

/** An optional integer parameter: undefined when absent. */
export function parseOptionalIntParam(name: string, value: string | undefined, rule: Omit<IntParamRule, 'default'>): number | undefined {
  return value === undefined ? undefined : parseIntParam(name, value, { ...rule, default: 0 });
}

function invalid(name: string, message: string): AppError {
  return badRequest(`${name} ${message}`, { errors: [{ parameter: name, message }] });
}
