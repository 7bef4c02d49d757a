import { round1 } from '../../../src/domain/composite.js';
import type { ScoreValues } from '../../../src/domain/scores/score.events.js';
import { clamp, type SimDay } from './market-simulation.js';
import { seededStream, STREAM_TAGS, type Rng } from './random.js';

const RESTATE_PROBABILITY = 0.01;

export interface RestateBatch {
  /** Score date restated. */
  date: string;
  at: string;
  /** Revision of the event inside `scores-<date>` (publication is 0). */
  revision: number;
  rows: ScoreValues[];
}

export class Restatements {
  private readonly rng: Rng;
  private readonly byPublicationDate = new Map<string, RestateBatch[]>();

  constructor(
    seed: number,
    private readonly rowOf: (i: number, date: string, ms: number, ws: number) => ScoreValues,
  ) {
    this.rng = seededStream(seed, STREAM_TAGS.restate);
  }

  draw(day: SimDay, publishedAt: string): void {
    const rng = this.rng;
    const picked: number[] = [];
    for (let i = 0; i < day.ms.length; i++) if (rng.next() < RESTATE_PROBABILITY) picked.push(i);
    if (picked.length === 0) return;
    const publishedMs = Date.parse(publishedAt);
    const instants = Array.from({ length: Math.min(picked.length, rng.int(1, 3)) }, () =>
      new Date(publishedMs + rng.int(86_400, 432_000) * 1000).toISOString(),
    );
    const byInstant = new Map<string, ScoreValues[]>();
    for (const i of picked) {
      const at = rng.pick(instants);
      const ms = nudge(day.ms[i]!, rng, 0.5, 4);
      const ws = rng.next() < 0.5 ? nudge(day.ws[i]!, rng, 0.3, 3) : day.ws[i]!;
      const rows = byInstant.get(at) ?? [];
      rows.push(this.rowOf(i, day.date, ms, ws));
      byInstant.set(at, rows);
    }
    let revision = 0; // the publication is revision 0 of scores-<date>
    for (const at of [...byInstant.keys()].sort()) {
      revision += 1;
      const batch: RestateBatch = { date: day.date, at, revision, rows: byInstant.get(at)! };
      const on = at.slice(0, 10);
      const list = this.byPublicationDate.get(on) ?? [];
      list.push(batch);
      this.byPublicationDate.set(on, list);
    }
  }

  publishedOn(date: string): readonly RestateBatch[] {
    return this.byPublicationDate.get(date) ?? [];
  }
}

function nudge(x: number, rng: Rng, min: number, max: number): number {
  const sign = rng.next() < 0.5 ? -1 : 1;
  let y = round1(clamp(x + sign * rng.uniform(min, max), 0, 100));
  if (y === x) y = round1(clamp(x - sign * min, 0, 100));
  return y;
}
