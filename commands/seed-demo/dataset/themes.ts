import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { THEME_RELATIONSHIPS } from '../../../src/domain/scores/reference.events.js';
import { projectRoot } from '../../../src/core/paths.js';

const themesSchema = z
  .array(
    z.object({
      slug: z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/),
      name: z.string().min(1),
      description: z.string().min(1),
      /** 0..100: how strongly the theme drives its constituents. */
      strength: z.number().min(0).max(100),
      constituents: z.array(
        z.object({
          ticker: z.string().min(1),
          relationship: z.enum(THEME_RELATIONSHIPS),
        }),
      ),
    }),
  )
  .refine((themes) => new Set(themes.map((t) => t.slug)).size === themes.length, 'theme slugs must be unique');

/** A theme basket; constituents missing from a custom universe are dropped. */
export type DemoTheme = z.infer<typeof themesSchema>[number];

const THEMES_FILE = 'commands/seed-demo/dataset/themes.json';

/**
 * The demo's theme baskets, in publication order.
 * Read from the source tree: dist/ gets no copy of the JSON.
 */
export function loadDemoThemes(): DemoTheme[] {
  const text = readFileSync(join(projectRoot(), THEMES_FILE), 'utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`invalid ${THEMES_FILE}: ${(err as Error).message}`);
  }
  const parsed = themesSchema.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}`);
    throw new Error(`invalid ${THEMES_FILE}:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

export function themesInUniverse(themes: readonly DemoTheme[], symbols: ReadonlyMap<string, unknown>): DemoTheme[] {
  return themes
    .map((t) => ({ ...t, constituents: t.constituents.filter((c) => symbols.has(c.ticker)) }))
    .filter((t) => t.constituents.length > 0);
}
