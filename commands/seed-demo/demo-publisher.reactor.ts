import { advanceDemo, type AdvanceDeps } from './seed-demo.handler.js';

/** Keeps a long-running demo current: appends each new trading day once the clock passes it. */
export function startDemoPublisher(deps: AdvanceDeps & { intervalMs?: number; onError?: (err: unknown) => void }): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(() => advanceDemo(deps)).catch((err) => deps.onError?.(err));
  }, deps.intervalMs ?? 60_000);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
