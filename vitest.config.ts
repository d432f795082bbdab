// One `vitest run` runs four projects: "unit", every integration and contract test twice, on the SQLite store
// ("sqlite") and on the PostgreSQL store ("postgres"), and the PostgreSQL tests that matter most behind a pooler
// once more, through a PgBouncer in transaction mode, with the server restart tests ("pgbouncer"); test-store.ts
// reads TEST_STORE and TEST_POOLER.
// The global setup (Redis, PostgreSQL) is on the root config only: vitest runs the root's global setup once per
// run and merges what it provides into every project. Inline projects do not inherit the root's options (no
// `extends`), which keeps the setup off the projects: it would otherwise run once per project.
import { defineConfig } from 'vitest/config';

const shared = {
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: 'forks',
  fileParallelism: true,
  maxWorkers: 2,
  // expect.poll waits for what another process does (a log line, a scrape): a busy machine takes longer than
  // vitest's default second, and a poll only waits as long as it must.
  expect: { poll: { timeout: 15_000 } },
} as const;

const storeTests = ['test/integration/**/*.test.ts', 'test/contract/**/*.test.ts'];
// A web's drain and rolling deploys, from this tree and from previous releases, on each store; the upgrade from
// the release of 2026-11-27 on SQLite alone (its PostgreSQL reads named their columns).
const deployTests = [
  'test/deploy/drain.test.ts',
  'test/deploy/rolling-restart.test.ts',
  'test/deploy/previous-release.test.ts',
];
const sqliteDeployTests = ['test/deploy/upgrade-2026-11-27.test.ts'];

export default defineConfig({
  test: {
    ...shared,
    globalSetup: ['test/helpers/global-setup.ts'],
    projects: [
      { test: { ...shared, name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        // test/start drives `npm start` itself, whose store is the default one: once is enough.
        test: {
          ...shared,
          name: 'sqlite',
          include: [...storeTests, 'test/start/**/*.test.ts', ...deployTests, ...sqliteDeployTests],
          env: { TEST_STORE: 'sqlite' },
        },
      },
      {
        // Several hosts sharing one database is what PostgreSQL is for: test/hosts runs on it alone.
        test: {
          ...shared,
          name: 'postgres',
          include: [...storeTests, 'test/hosts/**/*.test.ts', ...deployTests],
          env: { TEST_STORE: 'postgres' },
        },
      },
      {
        // What a transaction pooler changes: many connections and processes at once, prepared statements, the
        // admin CLI's short-lived connections. test/restart starts its own servers (it stops them).
        test: {
          ...shared,
          name: 'pgbouncer',
          include: [
            'test/integration/real-orders.test.ts',
            'test/integration/order-faults.test.ts',
            'test/integration/order-batches.test.ts',
            'test/integration/admin-cli.test.ts',
            'test/integration/reconcile.test.ts',
            'test/hosts/**/*.test.ts',
            'test/restart/**/*.test.ts',
          ],
          env: { TEST_STORE: 'postgres', TEST_POOLER: 'pgbouncer' },
        },
      },
      {
        // A server lost for good and its replica or standby promoted (issue 43): each file starts its own Redis
        // behind Sentinels or PostgreSQL with a standby, and kills them.
        test: { ...shared, name: 'failover', include: ['test/failover/**/*.test.ts'] },
      },
    ],
  },
});
