/** Small helpers for benchmarks: medians over repeated runs (this machine is shared and noisy). */
export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function fmt(n: number, digits = 1): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

export function report(name: string, value: string, target: string, ok: boolean): void {
  process.stdout.write(`${ok ? 'PASS' : 'MISS'}  ${name.padEnd(48)} ${value.padEnd(28)} target ${target}\n`);
}

/** A figure printed for comparison, with no target to pass or miss. */
export function info(name: string, value: string, note = ''): void {
  process.stdout.write(`INFO  ${name.padEnd(48)} ${value.padEnd(28)} ${note}\n`);
}
