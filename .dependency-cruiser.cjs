/**
 * The layers, bottom up (docs/architecture.md draws them):
 *   kernel       src/core (ports, primitives, command handler, projector runner) below src/domain (each
 *                feature's events, state, evolve and rules, one folder per feature)
 *   web          src/web: the HTTP vocabulary feature controllers share (headers, problems, parameters, the meter port)
 *   infra        adapters of the ports: the kernel only
 *   projections  read models: the kernel only
 *   commands     write side: the kernel, web, and read models (a reactor or a lookup reads what a projection wrote)
 *   queries      read side: the kernel, web and read models
 *                a slice (a folder of commands/, queries/ or projections/) never imports another slice: what two
 *                slices share is kernel, or in their layer's shared/ folder
 *   src/app      HTTP, MCP, CLI, composition root, server: anything below
 * test/integration/layers.test.ts shows each rule firing on a miniature tree.
 */
const KERNEL = '^src/(core|domain)/';
const APP = '^src/app/';

module.exports = {
  forbidden: [
    {
      name: 'kernel-imports-only-kernel',
      comment: 'src/core and src/domain are the bottom layer: they import nothing of the project above them.',
      severity: 'error',
      from: { path: KERNEL },
      to: { path: '^(src/app|src/web|commands|queries|projections|infra)/' },
    },
    {
      name: 'core-below-domain',
      comment: 'src/core holds ports and primitives that know no business rule: it never imports src/domain.',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: '^src/domain/' },
    },
    {
      name: 'web-imports-only-kernel',
      comment: 'src/web is the HTTP vocabulary controllers share; it knows the kernel and nothing of the features.',
      severity: 'error',
      from: { path: '^src/web/' },
      to: { path: '^(src/app|commands|queries|projections|infra)/' },
    },
    {
      name: 'infra-imports-only-kernel',
      comment: 'An adapter implements a port of the kernel and knows nothing of the features that use it.',
      severity: 'error',
      from: { path: '^infra/' },
      to: { path: '^(src/app|src/web|commands|queries|projections)/' },
    },
    {
      name: 'projections-import-only-kernel',
      comment: 'A projection folds events into a read model; it never imports a command, a query or the app. A rule both sides need lives in the kernel.',
      severity: 'error',
      from: { path: '^projections/' },
      to: { path: '^(src/app|src/web|commands|queries|infra)/' },
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
      name: 'slices-do-not-import-slices',
      comment:
        'A folder of commands/, queries/ or projections/ imports no other folder of its kind: what two features share moves to the kernel (or web), what two projections share to projections/shared, and the application wires one to another.',
      severity: 'error',
      from: { path: '^(commands|queries|projections)/([^/]+)/' },
      to: { path: '^$1/', pathNot: '^$1/(shared|$2)/' },
    },
    {
      name: 'http-below-mcp',
      comment: 'MCP is served over HTTP: src/app/mcp may use src/app/http, never the other way round (server.ts mounts MCP on the app).',
      severity: 'error',
      from: { path: '^src/app/http/' },
      to: { path: '^src/app/mcp/' },
    },
    {
      name: 'mcp-tools-not-controllers',
      comment: 'A REST route and an MCP tool are two faces of one read: both call the `run` of its *.query.ts, so a tool never imports a tsoa controller.',
      severity: 'error',
      from: { path: '^src/app/mcp/' },
      to: { path: '[.]controller[.][jt]s$' },
    },
    {
      name: 'vendor-clients-only-in-infra',
      comment:
        'Only infra/ (and the bench baseline server, test/bench/bare-server.ts) may import a store or bus client; everything else talks to the ports in src/core. One test watches the statements the PostgreSQL log sends through the driver.',
      severity: 'error',
      from: { pathNot: '^(infra|test/bench)/|^test/integration/postgresql-event-log[.]test[.]ts$' },
      to: { path: 'node_modules/(@eventstore/db-client|mongodb|kafkajs|better-sqlite3|pg)/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-folder-cycle',
      comment: 'Folders import each other one way only: a folder cycle (core and domain, http and mcp, a slice and another) means a feature has no single home.',
      severity: 'error',
      scope: 'folder',
      from: { pathNot: '^test/' },
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
