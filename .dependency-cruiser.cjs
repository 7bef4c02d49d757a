/**
 * The layers, bottom up (docs/architecture.md draws them):
 *   kernel       src/core (ports, command handler, projector runner), src/domain (rules), src/events (every event and stream name)
 *   infra        adapters of the ports: the kernel only
 *   projections  read models: the kernel only
 *   commands     write side: the kernel, and read models (a reactor or a lookup reads what a projection wrote)
 *   queries      read side: the kernel and read models
 *   src/app      HTTP, MCP, CLI, composition root, server: anything below
 * test/integration/layers.test.ts shows each rule firing on a miniature tree.
 */
const KERNEL = '^src/(core|domain|events)/';
const APP = '^src/app/';

module.exports = {
  forbidden: [
    {
      name: 'kernel-imports-only-kernel',
      comment: 'src/core, src/domain and src/events are the bottom layer: they import nothing of the project above them.',
      severity: 'error',
      from: { path: KERNEL },
      to: { path: '^(src/app|commands|queries|projections|infra)/' },
    },
    {
      name: 'infra-imports-only-kernel',
      comment: 'An adapter implements a port of the kernel and knows nothing of the features that use it.',
      severity: 'error',
      from: { path: '^infra/' },
      to: { path: '^(src/app|commands|queries|projections)/' },
    },
    {
      name: 'projections-import-only-kernel',
      comment: 'A projection folds events into a read model; it never imports a command, a query or the app. A rule both sides need lives in the kernel.',
      severity: 'error',
      from: { path: '^projections/' },
      to: { path: '^(src/app|commands|queries|infra)/' },
    },
    {
      name: 'commands-not-queries-or-app',
      comment: 'The write side uses the kernel and read models, never a query or the application layer.',
      severity: 'error',
      from: { path: '^commands/' },
      to: { path: `^(queries|infra)/|${APP}` },
    },
    {
      name: 'queries-not-commands-or-app',
      comment: 'The read side reads read models through the kernel ports; it never imports a command or the application layer (HTTP helpers it needs live in queries/shared).',
      severity: 'error',
      from: { path: '^queries/' },
      to: { path: `^(commands|infra)/|${APP}` },
    },
    {
      name: 'vendor-clients-only-in-infra',
      comment: 'Only infra/ (and the bench baseline server, test/bench/bare-server.ts) may import a store or bus client; everything else talks to the ports in src/core.',
      severity: 'error',
      from: { pathNot: '^(infra|test/bench)/' },
      to: { path: 'node_modules/(@eventstore/db-client|mongodb|kafkajs|better-sqlite3|pg)/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^dist/|src/app/http/generated/)' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'], extensions: ['.ts', '.js'] },
  },
};
