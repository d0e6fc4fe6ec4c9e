import { spawn, spawnSync } from 'node:child_process';
import { constants } from 'node:os';
import path from 'node:path';

import { onRunStopped, signalEach } from './lib/run-stop';

/**
 * `npm run test:busy`: the whole suite (`npm test`) while a background load keeps both cores half
 * busy, as a shared CI machine does, so that a test waiting on a sleep or on an idle machine shows
 * itself. With arguments, jest alone over them (`npm run test:busy -- test/unit`). The load stops
 * when the run ends, however it ends (Ctrl-C, SIGTERM, its parent gone). A manual or CI-flag
 * command: `.ci/run` does not install stress-ng.
 */
const PROJECT_ROOT = path.resolve(__dirname, '..');
/** Two stressors, each busy half of the time: both cores of the CI machine, half taken. */
const BACKGROUND_LOAD = ['--cpu', '2', '--cpu-load', '50'] as const;
const MISSING =
  '[test:busy] stress-ng is not installed: install it (apt-get install stress-ng, brew install stress-ng) to run the suite under load, or run npm test';

function main(): void {
  if (spawnSync('stress-ng', ['--version'], { stdio: 'ignore' }).status !== 0) {
    process.stderr.write(`${MISSING}\n`);
    process.exit(1);
  }
  const passed = process.argv.slice(2);
  const [file, ...args] =
    passed.length === 0 ? ['npm', 'test'] : [process.execPath, require.resolve('jest/bin/jest'), ...passed];

  // Its own process group, so that one signal to the group stops it and the stressors it forks.
  const load = spawn('stress-ng', [...BACKGROUND_LOAD], { stdio: 'ignore', detached: true });
  const loadExited = new Promise<void>((resolve) => load.once('exit', () => resolve()));
  const signalLoad = (signal: NodeJS.Signals) => {
    if (load.pid !== undefined && load.exitCode === null && load.signalCode === null)
      signalEach([-load.pid], signal);
  };
  // Whatever ends this process stops the load: an exception, process.exit, the end of the run.
  process.on('exit', () => signalLoad('SIGTERM'));
  process.stderr.write(
    `[test:busy] stress-ng ${BACKGROUND_LOAD.join(' ')} (pid ${load.pid}) keeps both cores half busy while: ${passed.length === 0 ? 'npm test' : `jest ${passed.join(' ')}`}\n`,
  );

  const run = spawn(file, args, { cwd: PROJECT_ROOT, stdio: 'inherit' });
  onRunStopped((signal) => {
    // A Ctrl-C reaches the run too (same process group); a SIGTERM to this process alone does not.
    if (run.exitCode === null && run.signalCode === null) run.kill(signal);
  });
  run.once('exit', (code, signal) => {
    signalLoad('SIGTERM');
    // stress-ng stops its stressors before it exits itself; one that hangs is killed outright.
    const forced = setTimeout(() => signalLoad('SIGKILL'), 5_000);
    void loadExited.then(() => {
      clearTimeout(forced);
      process.stderr.write('[test:busy] background load stopped\n');
      process.exit(code ?? 128 + (signal ? constants.signals[signal] : 0));
    });
  });
}

main();
