/**
 * Dunning: a month's invoice the card processor could not collect. The grace is stated here once
 * (docs/billing.md and the account page read it): past it, still unpaid, the plan falls back to
 * free at the end of that month; what was already paid for (packs, the month's allowance) stays.
 */
export const DUNNING_GRACE_DAYS = 14;

/** The end of the grace for a failure recorded at `at`. */
export const graceUntil = (at: Date): string => new Date(at.getTime() + DUNNING_GRACE_DAYS * 86_400_000).toISOString();
