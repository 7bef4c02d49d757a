import { spawn, type ChildProcess } from 'node:child_process';
import { projectRoot } from '../../src/core/paths.js';
import { runCli, until } from '../support/processes.js';

/** A built server (`dist/src/app/main.js`) started with `env`; resolves once its banner names the URL. */
export function startBenchServer(env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, ['dist/src/app/main.js'], { cwd: projectRoot(), env, stdio: ['ignore', 'ignore', 'pipe'] });
  let out = '';
  // The start banner is on stderr (stdout is the JSON log stream).
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const listening = /listening on (http:\/\/localhost:\d+)/;
  return until(() => listening.test(out), 120_000).then(() => ({ child, url: listening.exec(out)![1]! }));
}

/** A new account of `tier` (`scores keys create`): its key. */
export async function newBenchKey(tier: string, env: NodeJS.ProcessEnv): Promise<string> {
  const r = await runCli(['keys', 'create', '--tier', tier, '--json'], env);
  if (r.code !== 0) throw new Error(r.stderr);
  return (JSON.parse(r.stdout) as { key: string }).key;
}
