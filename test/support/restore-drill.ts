import { runCli } from './processes.js';

/** A metered call the service answered 200: its X-Request-Id, the account charged, and when the answer came (ms since the epoch). */
export interface Acknowledged {
  requestId: string;
  account: string;
  at: number;
}

/** Who calls: an account's key on `connections` connections of its own. */
export interface Caller {
  account: string;
  key: string;
  connections: number;
}

/**
 * Metered GETs of `paths` in turn, one loop per connection, until `stop` or until the server is
 * gone (a refused or cut connection ends a loop): every 200 is recorded as acknowledged. A refusal
 * (429 at the account's rate) is not a debit and is not recorded.
 */
export function meteredLoad(baseUrl: string, callers: readonly Caller[], paths: readonly string[]): { acknowledged: Acknowledged[]; refused: number; stop(): Promise<void> } {
  const acknowledged: Acknowledged[] = [];
  const state = { stopped: false, refused: 0 };
  const loop = async (caller: Caller, offset: number) => {
    for (let i = offset; !state.stopped; i++) {
      try {
        const res = await fetch(`${baseUrl}${paths[i % paths.length]}`, { headers: { 'X-API-Key': caller.key } });
        const at = Date.now();
        await res.arrayBuffer();
        if (res.status === 200) acknowledged.push({ requestId: res.headers.get('x-request-id')!, account: caller.account, at });
        else state.refused++;
      } catch {
        return;
      }
    }
  };
  const loops = callers.flatMap((c) => Array.from({ length: c.connections }, (_, n) => loop(c, n)));
  return {
    acknowledged,
    get refused() {
      return state.refused;
    },
    async stop() {
      state.stopped = true;
      await Promise.all(loops);
    },
  };
}

/** Each debit's request id in the accounts' ledgers, as `scores ledger export --account A` prints them (JSON lines): the accounts it is in, once per line. */
export async function ledgerDebits(accounts: readonly string[], env: NodeJS.ProcessEnv, built?: boolean): Promise<Map<string, string[]>> {
  const exports = await Promise.all(accounts.map((account) => runCli(['ledger', 'export', '--account', account], env, { built })));
  const debits = new Map<string, string[]>();
  for (const [i, exit] of exports.entries()) {
    if (exit.code !== 0) throw new Error(`scores ledger export --account ${accounts[i]} exited ${exit.code}: ${exit.stderr}`);
    for (const text of exit.stdout.split('\n')) {
      if (!text) continue;
      const line = JSON.parse(text) as { kind: string; data: { request_id?: string } };
      if (line.kind !== 'CreditsDebited') continue;
      const id = line.data.request_id!;
      debits.set(id, [...(debits.get(id) ?? []), accounts[i]!]);
    }
  }
  return debits;
}

/** The acknowledged calls set against the ledgers after a loss at `lossAt`. */
export interface LossReport {
  /** Acknowledged, and not in their account's ledger: with their age at the loss (ms), oldest first. */
  lost: (Acknowledged & { age: number })[];
  /** Request ids debited more than once, or in another account than the one that was answered. */
  doubled: string[];
  misplaced: string[];
}

export function lossReport(acknowledged: readonly Acknowledged[], debits: ReadonlyMap<string, string[]>, lossAt: number): LossReport {
  const lost = acknowledged.filter((a) => !debits.has(a.requestId)).map((a) => ({ ...a, age: lossAt - a.at }));
  lost.sort((a, b) => b.age - a.age);
  const doubled = [...debits].filter(([, accounts]) => accounts.length > 1).map(([id]) => id);
  const misplaced = acknowledged.filter((a) => debits.has(a.requestId) && !debits.get(a.requestId)!.includes(a.account)).map((a) => a.requestId);
  return { lost, doubled, misplaced };
}

/** One line for a person: how many acknowledged calls were lost and how old they were at the loss. */
export function describeLoss(report: LossReport, acknowledged: number): string {
  if (report.lost.length === 0) return `0 of ${acknowledged} acknowledged calls lost`;
  // A call answered as the server was killed may be read a moment after: its age is 0, not less.
  const [oldest, newest] = [report.lost[0]!.age, report.lost[report.lost.length - 1]!.age].map((ms) => (Math.max(0, ms) / 1000).toFixed(1));
  return `${report.lost.length} of ${acknowledged} acknowledged calls lost, answered ${oldest} s to ${newest} s before the loss`;
}
