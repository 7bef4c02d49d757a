import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { SESSION_COOKIE } from '../http/account/account-web.js';
import type { Front } from './front.types.js';

/** Debian's `nginx-light` (or any nginx 1.18+): on PATH, or where Debian puts it (off a non-root PATH). */
export function findNginx(env: NodeJS.ProcessEnv = process.env): string | null {
  const dirs = [...(env['PATH'] ?? '').split(delimiter).filter(Boolean), '/usr/sbin', '/usr/local/sbin'];
  return dirs.map((d) => join(d, 'nginx')).find((path) => existsSync(path)) ?? null;
}

/** `$scores_caller`: `key:<X-API-Key>`, else `session:<account session>`, else empty (round robin), as key-routing.ts's callerOf. */
function callerMaps(): string {
  const cookie = SESSION_COOKIE.replace(/[.-]/g, (c) => `\\${c}`);
  return `
  map $http_cookie $scores_session {
    "~(?:^|;)\\s*${cookie}=(?<sid>[^;\\s]+)" "session:$sid";
    default "";
  }
  map $http_x_api_key $scores_caller {
    "" $scores_session;
    default "key:$http_x_api_key";
  }`;
}

/**
 * The configuration: one upstream of the API processes, hashed on the caller with nginx's
 * consistent (ketama) hash, so a key's calls have one process while it lives and a dead
 * process's callers move to the others; an empty caller goes round robin. A process that refuses
 * a connection is left out for a second (`max_fails=1 fail_timeout=1s`) and the request goes to
 * the next one (for a POST too: it never reached the dead one). Responses and request bodies are
 * streamed, not buffered: the API bounds its bodies itself, and bulk files stream to the caller.
 */
function config(dir: string, listen: string, targets: readonly string[]): string {
  const servers = targets.map((t) => `    server ${new URL(t).host.replace(/^localhost:/, '127.0.0.1:')} max_fails=1 fail_timeout=1s;`).join('\n');
  return `# Written by scores fleet (src/app/fleet/nginx-front.ts); rewritten and reloaded when an API process joins.
worker_processes 1;
error_log ${dir}/error.log warn;
pid ${dir}/nginx.pid;
events { worker_connections 8192; }
http {
  access_log off;
  server_tokens off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
${callerMaps()}
  upstream scores_api {
    hash $scores_caller consistent;
${servers}
    keepalive 256;
    # Below node's 5 s keep-alive timeout: a connection the API process closes as nginx reuses it
    # would count as the process failing, and its keys would go elsewhere for a second.
    keepalive_timeout 4s;
  }
  server {
    listen ${listen};
    client_max_body_size 0;
    location / {
      proxy_pass http://scores_api;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_buffering off;
      proxy_request_buffering off;
      proxy_read_timeout 60s;
      proxy_next_upstream error timeout;
      error_page 502 503 504 = @unreachable;
    }
    location @unreachable {
      default_type application/problem+json;
      return 502 '{"title":"API process unreachable; retry","status":502}';
    }
  }
}
`;
}

async function freePort(host: string): Promise<number> {
  const server = createServer().listen(0, host);
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const accepts = (host: string, port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, host, () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

/** The master's worker processes (Linux: /proc/<pid>/task/<pid>/children). */
function workersOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return [];
  }
}

/**
 * The fleet's front as an nginx master process of its own (`nginx -g 'daemon off;'`), configured in
 * a temporary directory: the same routing as the in-process front (front.ts) at a fraction of its
 * CPU per call (docs/scaling.md, "The front"), and the shape of the production front.
 */
export async function startNginxFront(nginx: string, targets: readonly string[], options: { port: number; host: string }): Promise<Front> {
  const dir = mkdtempSync(join(tmpdir(), 'scores-front-'));
  const port = options.port || (await freePort(options.host));
  const listen = `${options.host.includes(':') ? `[${options.host}]` : options.host}:${port}`;
  const members = [...targets];
  const write = () => writeFileSync(join(dir, 'nginx.conf'), config(dir, listen, members));
  write();
  const test = spawnSync(nginx, ['-t', '-q', '-p', dir, '-c', join(dir, 'nginx.conf')], { encoding: 'utf8' });
  if (test.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`nginx refused the front's configuration: ${test.stderr.trim()}`);
  }
  const child: ChildProcess = spawn(nginx, ['-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const connectHost = options.host === '0.0.0.0' ? '127.0.0.1' : options.host === '::' ? '::1' : options.host;
  for (let waited = 0; !(await accepts(connectHost, port)); waited += 50) {
    if (child.exitCode !== null || waited > 10_000) {
      child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`nginx did not listen on ${listen}: ${stderr.trim() || readLog(dir)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url: `http://${connectHost === '127.0.0.1' ? 'localhost' : connectHost}:${port}`,
    async add(target) {
      members.push(target);
      write();
      // A reload starts new workers with the new configuration; the old ones finish their requests,
      // close their idle connections and exit. Until they have, a kept-alive connection may still
      // be routed by the old configuration.
      const before = workersOf(child.pid!);
      child.kill('SIGHUP');
      const settled = () => {
        const now = workersOf(child.pid!);
        return now.length > 0 && !before.some((pid) => now.includes(pid));
      };
      for (let waited = 0; !settled() && waited < 10_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function readLog(dir: string): string {
  try {
    return readFileSync(join(dir, 'error.log'), 'utf8').trim().split('\n').slice(-5).join('\n');
  } catch {
    return '';
  }
}
