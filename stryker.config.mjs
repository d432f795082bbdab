// Mutation testing of the pure core: `npm run test:mutation` (docs/developing.md, "Mutation testing"). Stryker changes one
// thing at a time in these modules (a condition, an operator, a constant, a pattern) and runs the unit tests
// that cover it; a change no test notices is a survivor: a missing test, or an equivalent change marked in the
// code with `// Stryker disable next-line <mutator>: <why>`.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  // The pure modules: no I/O beyond reading their shipped JSON. Add a pure module here when it is written.
  mutate: [
    'src/domain/money.ts',
    'src/domain/pricing.ts',
    'src/domain/tax.ts',
    'src/domain/item-status.ts',
    'src/domain/ip-ranges.ts',
    'src/auth/signature.ts',
    'client/src/signing.ts',
    'src/auth/webhook-signature.ts',
    'src/domain/canonical-json.ts',
  ],
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutation.config.ts' },
  // A mutant that does not compile is dropped before any test runs (and is not scored).
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.mutation.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  coverageAnalysis: 'perTest',
  // Reruns test only the mutants whose code or covering tests changed since the last run.
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  thresholds: { high: 98, low: 95, break: 95 },
  reporters: ['clear-text', 'progress', 'html'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  clearTextReporter: { allowColor: true, logTests: false, reportScoreTable: true },
  // The sandbox copies the project; leave out what the unit tests never read.
  ignorePatterns: ['data', '.tmp', 'dist', 'dist.*', 'coverage', 'reports'],
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
