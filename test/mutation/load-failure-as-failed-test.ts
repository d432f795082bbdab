// A vitest reporter for mutation runs only (vitest.mutation.config.ts). A mutant that makes a test file fail to
// load (a module-level pattern or schema that now throws, an import that breaks) leaves that file with no tests;
// Stryker's vitest runner counts only failed tests, so it scores such a mutant as survived
// (stryker-js issue 6150). This adds one failed test to each file that failed without any test failing in it,
// so the mutant is killed as it should be.
import type { RunnerTask, RunnerTestCase, RunnerTestFile } from 'vitest';
import type { Reporter, Vitest } from 'vitest/node';

export default class LoadFailureAsFailedTest implements Reporter {
  private vitest: Vitest | undefined;

  onInit(vitest: Vitest): void {
    this.vitest = vitest;
  }

  // Stryker reads the same state (`state.getFiles()`) once the run, reporters included, has ended.
  onTestRunEnd(): void {
    for (const file of this.vitest?.state.getFiles() ?? []) {
      if (file.result?.state !== 'fail' || hasFailedTest(file)) continue;
      file.tasks.push(failedLoad(file));
    }
  }
}

function hasFailedTest(task: RunnerTask): boolean {
  if (task.type === 'suite') return task.tasks.some(hasFailedTest);
  return task.result?.state === 'fail';
}

function failedLoad(file: RunnerTestFile): RunnerTestCase {
  return {
    type: 'test',
    id: `${file.id}_load`,
    name: 'the test file loads',
    fullName: `${file.name} the test file loads`,
    mode: 'run',
    file,
    meta: {},
    context: undefined as never,
    annotations: [],
    artifacts: [],
    timeout: 0,
    result: { state: 'fail', errors: file.result?.errors ?? [] },
  } as unknown as RunnerTestCase;
}
