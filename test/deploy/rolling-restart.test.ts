// A rolling restart (docs/operating.md, Deploying a release): the same release, each process in turn sent SIGTERM
// and started again under load, behind a balancer. A caller sees nothing of it: every request answered (no reset,
// no connection closed unanswered), nothing 5xx but 503 5030 with Retry-After; every order final and right, once
// per request id; every process exits 0.
import { describe, expect, it } from 'vitest';
import { expectUnharmed, rollingDeploy, THIS_TREE } from '../helpers/rolling-deploy.js';

describe('a rolling restart of every process under load', () => {
  it('then no caller sees an error and nothing is lost, doubled or charged wrong', async () => {
    const run = await rollingDeploy({ from: THIS_TREE, to: THIS_TREE });
    expectUnharmed(run);
    // Each web drained before it stopped (SHUTDOWN_DRAIN_MS of the harness, 3 s).
    const webs = run.steps.filter((s) => s.name.startsWith('web'));
    expect(webs.every((s) => s.stopMs >= 3000)).toBe(true);
    console.log(
      JSON.stringify({ steps: run.steps, answers: run.answers.length, accepted: run.accepted.size }),
    );
  }, 240_000);
});
