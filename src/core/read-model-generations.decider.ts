import { AppError } from './errors.js';

/**
 * Which generation of each read model readers use, kept as one stream of the log
 * (docs/scaling.md, "Replay beside a running fleet"). A replay builds a new generation of every
 * read model beside the live one and records it (`next`); the projector of each read model takes
 * the hand-over, brings the new generation up to the log head and switches it live; the replay
 * then drops the old generation. Generation 0 is the one a store had before any such replay. One
 * stream per read store (`generationsStreamOf(its database)`): read stores may share a log.
 */
export const generationsStreamOf = (readStore: string): string => `read-model-generations-${readStore}`;

/** A read model: projections committed together (one projector), and the collections they write. */
export interface ReadModelShape {
  unit: string;
  collections: readonly string[];
  projectors: readonly string[];
}

export type GenerationEvent =
  | { type: 'ReadModelsRebuilt'; data: { generation: number; units: ReadModelShape[] } }
  | { type: 'ReadModelHandoverTaken'; data: { unit: string; generation: number; owner: string } }
  | { type: 'ReadModelGenerationSwitched'; data: { unit: string; generation: number; previous: number } }
  | { type: 'ReadModelRebuildAbandoned'; data: { generation: number } }
  | { type: 'ReadModelGenerationDropped'; data: { generation: number } };

export interface UnitGeneration extends ReadModelShape {
  live: number;
  /** A rebuilt generation waiting to be switched live (null: none). */
  next: number | null;
  /** Who brings `next` up to the head and switches it (null: nobody yet). */
  taking: string | null;
}

export interface GenerationsState {
  units: Record<string, UnitGeneration>;
  /** The highest generation ever recorded (0: none). */
  newest: number;
  /** Generations no unit uses any more and not dropped yet. */
  retired: number[];
}

export type GenerationCommand =
  | { type: 'RecordRebuild'; generation: number; units: ReadModelShape[] }
  | { type: 'TakeHandover'; unit: string; generation: number; owner: string }
  | { type: 'SwitchGeneration'; unit: string; generation: number; owner: string }
  | { type: 'AbandonRebuild'; generation: number }
  | { type: 'RecordDrop'; generation: number };

const conflict = (detail: string) => new AppError('conflict', detail);

/** The generation a unit's readers use (0 for a unit never rebuilt). */
export const liveGeneration = (state: GenerationsState, unit: string): number => state.units[unit]?.live ?? 0;

/** Generations some unit still reads or is about to. */
const inUse = (state: GenerationsState): Set<number> =>
  new Set(Object.values(state.units).flatMap((u) => (u.next === null ? [u.live] : [u.live, u.next])));

function evolve(state: GenerationsState, event: GenerationEvent): GenerationsState {
  const units = { ...state.units };
  switch (event.type) {
    case 'ReadModelsRebuilt':
      for (const shape of event.data.units) {
        units[shape.unit] = { ...shape, live: units[shape.unit]?.live ?? 0, next: event.data.generation, taking: null };
      }
      return { ...state, units, newest: Math.max(state.newest, event.data.generation) };
    case 'ReadModelHandoverTaken':
      units[event.data.unit] = { ...units[event.data.unit]!, taking: event.data.owner };
      return { ...state, units };
    case 'ReadModelGenerationSwitched': {
      units[event.data.unit] = { ...units[event.data.unit]!, live: event.data.generation, next: null, taking: null };
      const next = { ...state, units };
      const used = inUse(next);
      return { ...next, retired: [...new Set([...state.retired, event.data.previous])].filter((g) => !used.has(g)) };
    }
    case 'ReadModelRebuildAbandoned':
      for (const [name, u] of Object.entries(units)) if (u.next === event.data.generation) units[name] = { ...u, next: null, taking: null };
      return { ...state, units, retired: [...new Set([...state.retired, event.data.generation])].filter((g) => !inUse({ ...state, units }).has(g)) };
    case 'ReadModelGenerationDropped':
      return { ...state, retired: state.retired.filter((g) => g !== event.data.generation) };
  }
}

function decide(state: GenerationsState, command: GenerationCommand): GenerationEvent[] {
  switch (command.type) {
    case 'RecordRebuild': {
      const pending = Object.values(state.units).find((u) => u.next !== null);
      if (pending) throw conflict(`generation ${pending.next} of the read models is being switched over (read model ${pending.unit}); one replay at a time`);
      if (command.generation <= state.newest) throw conflict(`generation ${command.generation} is not newer than ${state.newest}`);
      return [{ type: 'ReadModelsRebuilt', data: { generation: command.generation, units: command.units } }];
    }
    case 'TakeHandover': {
      const unit = state.units[command.unit];
      if (unit?.next !== command.generation) throw conflict(`read model ${command.unit} has no generation ${command.generation} to switch to`);
      if (unit.taking === command.owner) return [];
      if (unit.taking !== null) throw conflict(`read model ${command.unit}: ${unit.taking} is switching it`);
      return [{ type: 'ReadModelHandoverTaken', data: { unit: command.unit, generation: command.generation, owner: command.owner } }];
    }
    case 'SwitchGeneration': {
      const unit = state.units[command.unit];
      if (unit?.next !== command.generation || unit.taking !== command.owner) throw conflict(`read model ${command.unit}: ${command.owner} does not hold the switch to generation ${command.generation}`);
      return [{ type: 'ReadModelGenerationSwitched', data: { unit: command.unit, generation: command.generation, previous: unit.live } }];
    }
    case 'AbandonRebuild':
      return Object.values(state.units).some((u) => u.next === command.generation) ? [{ type: 'ReadModelRebuildAbandoned', data: { generation: command.generation } }] : [];
    case 'RecordDrop':
      if (inUse(state).has(command.generation)) throw conflict(`generation ${command.generation} is still read`);
      return state.retired.includes(command.generation) ? [{ type: 'ReadModelGenerationDropped', data: { generation: command.generation } }] : [];
  }
}

export const generationsDecider = {
  initialState: (): GenerationsState => ({ units: {}, newest: 0, retired: [] }),
  evolve,
  decide: (state: GenerationsState, command: GenerationCommand, _now: Date): GenerationEvent[] => decide(state, command),
};
