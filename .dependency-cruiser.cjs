/** Dependency rules: vendor clients of the stores and the bus live only in infra/. */
module.exports = {
  forbidden: [
    {
      name: 'vendor-clients-only-in-infra',
      comment: 'Only infra/ may import a store or bus client; everything else talks to the ports in src/core.',
      severity: 'error',
      from: { pathNot: '^infra/' },
      to: { path: 'node_modules/(@eventstore/db-client|mongodb|kafkajs|better-sqlite3)/' },
    },
    {
      name: 'domain-is-pure',
      comment: 'Projections and domain code never reach into HTTP, the CLI or adapters.',
      severity: 'error',
      from: { path: '^(projections|src/domain|src/events)/' },
      to: { path: '^(src/http|src/cli|infra)/' },
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
