import { AppError } from './errors.js';
import type { EventStore } from './event-store.port.js';
import type { Projection } from './projection.js';
import { ProjectorRunner } from './projector-runner.js';
import type { ReadStore } from './read-store.port.js';
import { GenerationLog, generationView } from './read-model-generations.js';
import { liveGeneration } from './read-model-generations.decider.js';

/** A read model as a unit of work: projections that read each other's documents, so committed together. */
export interface ReadModelDef {
  name: string;
  projections: readonly Projection[];
}

export interface ReadModelUnitOptions {
  /** This process (the generations stream records who switches a read model). */
  owner: string;
  /** How often the generations stream is read for a hand-over (default 250 ms). */
  pollMs?: number;
  /** Wraps the store the projector commits to (a lease's fence). */
  fence?: (store: ReadStore) => ReadStore;
  onError(err: unknown): void;
  /** This unit now projects `generation` (after a start or a switch). */
  onGeneration?(generation: number): void;
}

const isConflict = (err: unknown) => err instanceof AppError && err.code === 'conflict';

/**
 * One read model's projector, following its live generation (docs/scaling.md, "Replay beside a
 * running fleet"). When a replay records a new generation, this unit takes the hand-over: it stops
 * projecting the live generation (which readers keep reading, frozen), brings the new one from the
 * replay's position up to the log head, and switches it live; readers never see the read model go
 * back. When another process switched it (a replay that found no projector), it follows.
 */
export class ReadModelUnit {
  private runner: ProjectorRunner | null = null;
  private generation = 0;
  private timer: NodeJS.Timeout | null = null;
  private pass: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Resolves on `stop`: a catch-up in progress is not waited for (a stopped runner's start never settles). */
  private halted: Promise<void> = Promise.resolve();
  private halt: () => void = () => undefined;

  constructor(
    private readonly events: EventStore,
    private readonly base: ReadStore,
    private readonly log: GenerationLog,
    readonly def: ReadModelDef,
    private readonly options: ReadModelUnitOptions,
  ) {}

  /** The generation this unit projects. */
  get projecting(): number {
    return this.generation;
  }

  /**
   * Starts on the live generation; resolves once caught up with the log (rejects when catching up
   * failed: the unit then starts its projector again at its next look at the generations stream).
   */
  async start(): Promise<void> {
    this.stopped = false;
    this.halted = new Promise((resolve) => (this.halt = resolve));
    this.pass = this.log.current().then((state) => this.run(liveGeneration(state, this.def.name)));
    try {
      await this.pass;
    } finally {
      this.schedule();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.halt();
    if (this.timer) clearTimeout(this.timer);
    await this.pass.catch(() => undefined);
    await this.runner?.stop();
    this.runner = null;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.pass = this.check()
        .catch((err: unknown) => this.options.onError(err))
        .finally(() => this.schedule());
    }, this.options.pollMs ?? 250);
    this.timer.unref();
  }

  /** Projects `generation` from its checkpoints; resolves once caught up (or stopped meanwhile). */
  private async run(generation: number): Promise<void> {
    await this.runner?.stop();
    this.runner = null;
    if (this.stopped) return;
    const store = generationView(this.base, generation);
    const runner = new ProjectorRunner(this.events, this.options.fence ? this.options.fence(store) : store, this.def.projections, { onlyOwnData: true, onError: (err) => this.options.onError(err) });
    this.runner = runner;
    this.generation = generation;
    try {
      await Promise.race([runner.start(), this.halted]);
    } catch (err) {
      // Not caught up: nothing runs; the next look starts it again.
      await runner.stop();
      if (this.runner === runner) this.runner = null;
      throw err;
    }
    if (!this.stopped) this.options.onGeneration?.(generation);
  }

  /** One look at the generations stream: follow a switch, take a hand-over, or hold still while another process switches. */
  private async check(): Promise<void> {
    const unit = (await this.log.current()).units[this.def.name];
    const next = unit?.next ?? null;
    if (next !== null && (unit!.taking === null || unit!.taking === this.options.owner)) return this.handover(next);
    if (next !== null) {
      // Another process brings the new generation up and switches it: the live one stays as it is.
      await this.runner?.stop();
      this.runner = null;
      return;
    }
    const live = unit?.live ?? 0;
    if (live !== this.generation || !this.runner) await this.run(live);
  }

  private async handover(generation: number): Promise<void> {
    try {
      await this.log.decide({ type: 'TakeHandover', unit: this.def.name, generation, owner: this.options.owner });
    } catch (err) {
      if (isConflict(err)) return; // another process took it: the next look holds still
      throw err;
    }
    // Frozen from here: readers keep the live generation as it is until the new one is ahead of it.
    await this.run(generation);
    if (this.stopped) return;
    try {
      await this.log.decide({ type: 'SwitchGeneration', unit: this.def.name, generation, owner: this.options.owner });
    } catch (err) {
      if (!isConflict(err)) throw err;
      // Abandoned meanwhile: back to the live generation.
      await this.run(liveGeneration(await this.log.current(), this.def.name));
    }
  }
}
