/** A call answered 200: its `X-Request-Id` and the instant (ms) the client had the answer. */
export interface Ack {
  id: string;
  at: number;
}

/**
 * `connections` loops of metered `GET /v1/scores/AAPL` with `key` until `stop()` (or until the
 * server is gone): every 200 recorded as it is answered, for a drill to look for in the ledger.
 */
export function meteredLoad(url: string, key: string, connections: number): { acks: Ack[]; stop(): Promise<void> } {
  const acks: Ack[] = [];
  let stopped = false;
  const loop = async () => {
    while (!stopped) {
      try {
        const res = await fetch(`${url}/v1/scores/AAPL`, { headers: { 'X-API-Key': key } });
        await res.arrayBuffer();
        if (res.status === 200) acks.push({ id: res.headers.get('x-request-id')!, at: Date.now() });
      } catch {
        return; // the server is gone
      }
    }
  };
  const loops = Array.from({ length: connections }, loop);
  return {
    acks,
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

/** The request ids of the debits in `scores ledger export` output (JSON lines), one per call charged. */
export function debitRequestIds(exported: string): string[] {
  const lines = exported.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { kind: string; data: { request_id?: string } });
  return lines.filter((l) => l.kind === 'CreditsDebited').map((l) => l.data.request_id!);
}

/** The acknowledged calls absent from the ledger, each with its age (s) at the instant of the loss. */
export function lostCalls(acks: readonly Ack[], inLedger: ReadonlySet<string>, loss: number): (Ack & { age: number })[] {
  return acks.filter((a) => !inLedger.has(a.id)).map((a) => ({ ...a, age: (loss - a.at) / 1000 }));
}
