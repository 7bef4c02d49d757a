import { createRequire } from 'node:module';
import type { Page } from 'playwright-core';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/**
 * The serious and critical axe-core violations of the page `p` shows, one line each (its impact,
 * rule, help and the elements at fault). The page's policy must let a script in (a context with
 * `bypassCSP`).
 */
export async function severeAxeViolations(p: Page): Promise<string[]> {
  await p.addScriptTag({ path: AXE });
  const violations = await p.evaluate<AxeViolation[]>("axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)");
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join('; ')})`);
}
