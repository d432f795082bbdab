// The vitest config of mutation runs (stryker.config.mjs): the unit tests only, without the global setup
// (no Redis, no PostgreSQL; the pure modules need neither), and a reporter that makes a test file that fails to
// load count as a failed test (see test/mutation/load-failure-as-failed-test.ts).
import { defineConfig } from 'vitest/config';
import LoadFailureAsFailedTest from './test/mutation/load-failure-as-failed-test.js';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    testTimeout: 60_000,
    reporters: ['default', new LoadFailureAsFailedTest()],
  },
});
