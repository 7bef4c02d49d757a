import { defineCollection } from '../../src/core/read-store.port.js';

// The api-keys projection writes these documents; the usage-alerts projection reads an account's
// address from them while it applies an event, so the read model is defined here, between both.
/** One document per account. */
export interface AccountDoc {
  account_id: string;
  /** Sealed under the account's key, as the log holds it (null: none, or forgotten). */
  email: string | null;
  created_at: string;
  /** The operator's rate override; absent or `tier`: the plan's rate. */
  rate_limit?: number | 'unlimited' | 'tier';
}

export const accounts = defineCollection<AccountDoc>({
  name: 'accounts',
  key: (a) => a.account_id,
  fields: ['account_id', 'email'],
  indexes: [['email']],
});
