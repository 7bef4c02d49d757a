import { allProjections, readModelUnits } from '../../projections/index.js';
import { JobLease, processOwnerId } from '../core/lease.js';
import { ProjectorRunner } from '../core/projector-runner.js';
import { AppError } from '../core/errors.js';
import { checkpointOf, collectionOf, generationView } from '../core/read-model-generations.js';
import type { GenerationsState, ReadModelShape } from '../core/read-model-generations.decider.js';
import type { ReadModelDef } from '../core/read-model-unit.js';
import type { Services } from './container.js';

/**
 * `scores replay` on a shared read store, beside a running fleet (docs/scaling.md, "Replay beside
 * a running fleet"): the whole log is projected into a new generation of every read model, the
 * generation is recorded, each read model's projector (a worker's unit) brings it up to the head
 * and switches it live, and once the readers had time to follow, the old generation is dropped.
 */
export interface GenerationReplayOptions {
  /** How long a read model waits for its projector to take the hand-over before the replay does it (no worker projects it). */
  takeoverMs?: number;
  /** How long readers get to follow a switch before the old generation is dropped (they look every 250 ms). */
  graceMs?: number;
  /** How long the switch of every read model may take in all. */
  switchTimeoutMs?: number;
  onProgress?(events: number): void;
}

export interface GenerationReplay {
  generation: number;
  previous: number[];
  events: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const shapeOf = (def: ReadModelDef): ReadModelShape => ({
  unit: def.name,
  collections: def.projections.flatMap((p) => p.collections.map((c) => c.name)),
  projectors: def.projections.map((p) => p.name),
});

/** One replay at a time across the fleet: a lease of its own, renewed while it runs. */
async function replayLease(services: Services, run: (owner: string) => Promise<GenerationReplay>): Promise<GenerationReplay> {
  const owner = `replay:${processOwnerId()}`;
  const lease = new JobLease(services.events, services.transportClock, { job: 'replay', owner, ttlMs: 30_000 });
  if (!(await lease.acquire())) throw new AppError('conflict', 'another replay is rebuilding the read models (lease-replay is held)');
  const renewal = setInterval(() => void lease.renew().catch(() => undefined), 10_000);
  try {
    return await run(owner);
  } finally {
    clearInterval(renewal);
    await lease.release();
  }
}

export async function replayIntoNewGeneration(services: Services, options: GenerationReplayOptions = {}): Promise<GenerationReplay> {
  const { base } = services.readModels;
  if (!base.drop) throw new Error('this read store cannot hold generations side by side');
  const result = await replayLease(services, (owner) => rebuild(services, owner, options));
  if (result.previous.length === 0) {
    // Built in place: the replay's own lease events (its release last) come after what it
    // projected; taken too, so the read models hold the log as it is once the replay is done.
    const tail = new ProjectorRunner(services.events, generationView(base, result.generation), allProjections());
    await tail.start();
    await tail.stop();
  }
  return result;
}

/** The whole log into a new generation, switched over (or built in place on an empty read store). */
async function rebuild(services: Services, owner: string, options: GenerationReplayOptions): Promise<GenerationReplay> {
  const { base, generations } = services.readModels;
  const before = await generations.current();
  await dropRetired(services, before);
  // An empty read store has nothing to switch from: built in place, as generation 0.
  const empty = before.newest === 0 && (await Promise.all(allProjections().map((p) => base.checkpoint(p.name)))).every((c) => c === null);
  const generation = empty ? 0 : before.newest + 1;
  const units = readModelUnits();
  // The whole log into the new generation (a dead replay's leftovers of it are reset first).
  const runner = new ProjectorRunner(services.events, generationView(base, generation), allProjections());
  let events = 0;
  runner.onEventsApplied((n) => {
    events += n;
    options.onProgress?.(events);
  });
  await runner.replay();
  await runner.stop();
  if (empty) return { generation, previous: [], events };
  await generations.decide({ type: 'RecordRebuild', generation, units: units.map(shapeOf) });
  try {
    await switchAll(services, generation, units, owner, options);
  } catch (err) {
    // The read models not switched yet stay on their live generation; the next replay drops this one.
    await generations.decide({ type: 'AbandonRebuild', generation });
    throw err;
  }
  const previous = [...new Set(Object.values(before.units).map((u) => u.live))];
  if (previous.length === 0) previous.push(0);
  await sleep(options.graceMs ?? 2_000);
  await dropRetired(services, await generations.current());
  return { generation, previous, events };
}

/** Waits for every read model to switch; takes the hand-over of those no projector took. */
async function switchAll(services: Services, generation: number, units: ReadModelDef[], owner: string, options: GenerationReplayOptions): Promise<void> {
  const { generations } = services.readModels;
  const takeoverAt = Date.now() + (options.takeoverMs ?? 5_000);
  const deadline = Date.now() + (options.switchTimeoutMs ?? 120_000);
  for (;;) {
    const state = await generations.current();
    const waiting = units.filter((u) => state.units[u.name]?.live !== generation);
    if (waiting.length === 0) return;
    if (Date.now() > deadline) throw new Error(`read models not switched to generation ${generation} in time: ${waiting.map((u) => u.name).join(', ')}`);
    const untaken = waiting.filter((u) => state.units[u.name]?.next === generation && state.units[u.name]?.taking === null);
    if (Date.now() >= takeoverAt && untaken.length > 0) await switchHere(services, generation, untaken, owner);
    else await sleep(100);
  }
}

/** The hand-over of read models no projector took (no worker runs them): brought up to the head here and switched. */
async function switchHere(services: Services, generation: number, units: ReadModelDef[], owner: string): Promise<void> {
  const { base, generations } = services.readModels;
  const taken: ReadModelDef[] = [];
  for (const unit of units) {
    try {
      await generations.decide({ type: 'TakeHandover', unit: unit.name, generation, owner });
      taken.push(unit);
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'conflict')) throw err;
    }
  }
  if (taken.length === 0) return;
  const runner = new ProjectorRunner(services.events, generationView(base, generation), taken.flatMap((u) => u.projections));
  await runner.start();
  await runner.stop();
  for (const unit of taken) await generations.decide({ type: 'SwitchGeneration', unit: unit.name, generation, owner });
}

/** Drops the generations no read model uses any more (this replay's predecessor, or one a dead replay left). */
async function dropRetired(services: Services, state: GenerationsState): Promise<void> {
  const { base, generations } = services.readModels;
  const shapes = Object.values(state.units);
  for (const old of state.retired) {
    await base.drop!(
      shapes.flatMap((u) => u.collections.map((c) => collectionOf(c, old))),
      shapes.flatMap((u) => u.projectors.map((p) => checkpointOf(p, old))),
    );
    await generations.decide({ type: 'RecordDrop', generation: old });
  }
}
