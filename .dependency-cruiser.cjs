// `npm run lint` runs this: no circle in the import graph of src/, type-only imports
// included (tsPreCompilationDeps). The layer order itself is an ESLint rule
// (eslint.config.js, no-restricted-imports); this catches circles inside a layer too.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Imports point downstream (README "Layout"): a circle means two parts know each other.',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
}
