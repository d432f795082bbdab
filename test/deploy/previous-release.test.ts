// A release rolled out over the ones before it, and rolled back (docs/operating.md, Deploying a release): an
// earlier release (test/helpers/previous-release.ts) and this tree side by side on one store and one Redis, each
// process replaced in turn under load, behind a balancer. Old webs answer beside new ones, orders accepted by one
// version are settled by the other; a caller sees no error and no wrong answer, every order ends final and right.
import { beforeAll, describe, expect, it } from 'vitest';
import { PREVIOUS_RELEASE, RELEASE_2026_11_28, previousRelease } from '../helpers/previous-release.js';
import {
  expectUnharmed,
  rollingDeploy,
  THIS_TREE,
  unansweredByUndrained,
  type DeployRun,
} from '../helpers/rolling-deploy.js';

function logRun(run: DeployRun): void {
  console.log(
    JSON.stringify({ steps: run.steps, failures: run.failures.length, accepted: run.accepted.size }),
  );
  console.log(run.timeline.join('\n'));
}

/** Every web stopped was of a release that drains, and stopped after its drain (3 s by default), never before. */
function expectDrained(run: DeployRun): void {
  const webs = run.steps.filter((s) => s.name.startsWith('web'));
  expect(webs.length).toBeGreaterThan(0);
  expect(webs.filter((s) => !s.drains || s.stopMs < 3000)).toEqual([]);
}

describe.each([
  // The release before this one drains as this one does: not one request may go unanswered, either way.
  { release: PREVIOUS_RELEASE, undrained: false },
  // The last release without the drain: the requests sent on a kept-alive connection to one of its webs as it
  // stops are closed unanswered (its callers retry them with their request ids), and are all a caller may see.
  { release: RELEASE_2026_11_28, undrained: true },
])('the release $release and this tree, rolled process by process under load', ({ release, undrained }) => {
  // Made once and cached; when its lock differs from this tree's, its install takes minutes the first time.
  let previous: string;
  beforeAll(async () => {
    previous = await previousRelease(release);
  }, 15 * 60_000);

  it(`from ${release} to this tree: no caller error, nothing lost, doubled or charged wrong`, async () => {
    const run = await rollingDeploy({ from: previous, to: THIS_TREE });
    logRun(run);
    expectUnharmed(run);
    if (undrained)
      console.log(`unanswered while a web of ${release} stopped: ${unansweredByUndrained(run).length}`);
    else {
      expect(unansweredByUndrained(run)).toEqual([]);
      expectDrained(run);
    }
  }, 240_000);

  it(`back from this tree to ${release}: the same`, async () => {
    const run = await rollingDeploy({ from: THIS_TREE, to: previous });
    logRun(run);
    expectUnharmed(run);
    expect(unansweredByUndrained(run)).toEqual([]);
    expectDrained(run);
  }, 240_000);
});
