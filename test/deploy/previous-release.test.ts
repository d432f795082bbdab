// A release rolled out over the one before it, and rolled back (docs/operating.md, Deploying a release): the
// previous release (test/helpers/previous-release.ts) and this tree side by side on one store and one Redis, each
// process replaced in turn under load, behind a balancer. Old webs answer beside new ones, orders accepted by one
// version are settled by the other; a caller sees no error and no wrong answer, every order ends final and right.
import { beforeAll, describe, expect, it } from 'vitest';
import { PREVIOUS_RELEASE, previousRelease } from '../helpers/previous-release.js';
import {
  expectUnharmed,
  rollingDeploy,
  THIS_TREE,
  unansweredByUndrained,
} from '../helpers/rolling-deploy.js';

// Made once and cached; when its lock differs from this tree's, its install takes minutes the first time.
let previous: string;
beforeAll(async () => {
  previous = await previousRelease(PREVIOUS_RELEASE);
}, 15 * 60_000);

describe(`the previous release (${PREVIOUS_RELEASE}) and this tree, rolled process by process under load`, () => {
  it('from the previous release to this tree: no caller error, nothing lost, doubled or charged wrong', async () => {
    const run = await rollingDeploy({ from: previous, to: THIS_TREE });
    console.log(
      JSON.stringify({ steps: run.steps, failures: run.failures.length, accepted: run.accepted.size }),
    );
    console.log(run.timeline.join('\n'));
    // The previous release's webs close their kept-alive connections at once (no drain): the requests sent on one
    // just then are retried by their callers, and are all that a caller may see of it.
    expectUnharmed(run);
    console.log(
      `unanswered while a web of ${PREVIOUS_RELEASE} stopped: ${unansweredByUndrained(run).length}`,
    );
  }, 240_000);

  it('back from this tree to the previous release: the same', async () => {
    const run = await rollingDeploy({ from: THIS_TREE, to: previous });
    console.log(
      JSON.stringify({ steps: run.steps, failures: run.failures.length, accepted: run.accepted.size }),
    );
    expectUnharmed(run);
    expect(unansweredByUndrained(run)).toEqual([]);
    expect(run.steps.filter((s) => s.name.startsWith('web')).every((s) => s.stopMs >= 3000)).toBe(true);
  }, 240_000);
});
