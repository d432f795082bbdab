// The upgrade from the release of 2026-11-27 (ab69f1c) on SQLite, under load, process by process: that release
// reads `SELECT o.*, i.*` and splits the row by position, so columns the newer migrations add to `orders` would
// shift what its processes read. Either the roll works as any other (nothing lost, doubled, charged wrong, no
// caller error), or the first new process refuses up front, exits non-zero and says which old processes are in
// the way and what to do, while the old ones go on serving: never an order damaged.
import { beforeAll, describe, expect, it } from 'vitest';
import { RELEASE_2026_11_27, previousRelease } from '../helpers/previous-release.js';
import { expectUnharmed, rollingDeploy, THIS_TREE } from '../helpers/rolling-deploy.js';

// Made once and cached; when its lock differs from this tree's, its install takes minutes the first time.
let release: string;
beforeAll(async () => {
  release = await previousRelease(RELEASE_2026_11_27);
}, 15 * 60_000);

describe(`the release of 2026-11-27 (${RELEASE_2026_11_27}) rolled to this tree on SQLite under load`, () => {
  it('then it works, or the first new process refuses, saying what to do, and no order is damaged', async () => {
    const run = await rollingDeploy({ from: release, to: THIS_TREE });
    console.log(
      JSON.stringify({ steps: run.steps, refused: run.refused, failures: run.failures.slice(0, 5) }),
    );
    if (run.refused) {
      // Said before anything changed: the new process names the processes in the way and what to do about them.
      expect(run.refused.output).toMatch(/\b(web|worker|clock)/i);
      expect(run.refused.output).toMatch(/\bstop\b|admin migrate/i);
    }
    expectUnharmed(run, { rolled: !run.refused });
  }, 240_000);
});
