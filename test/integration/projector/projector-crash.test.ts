import { fantasyTeamProjection } from '../../../shared/fantasy-team/fantasy-team.projection';
import { LOG_PARTITIONS } from '../../../shared/redis/partitions';
import { rebuildProjection } from '../../../workers/projector/rebuild';
import { createTestApp, type TestApp, testRedisEnv } from '../../helpers/app-fixture';
import { eventually, type ServiceProcess, startServiceProcess } from '../../helpers/processes';
import {
  caughtUp,
  partitionProgress,
  runTeamCommand,
  runWithConcurrency,
  scriptedCommand,
  snapshotDocuments,
  storedViews,
  streamLength,
  teamIdsOverEveryPartition,
  viewFromRecord,
} from '../../helpers/projector-fixtures';

const TEAMS = 100;
/** Commands per team in each phase (after its creation): 100 * (1 + 14 + 15) = 3,000 commands. */
const BEFORE_WORKER = 14;
const WHILE_WORKER = 15;

/** Runs steps [from, to) of every team's scripted life; teams in parallel, each team in order. */
function runSteps(subject: TestApp, teamIds: readonly string[], from: number, to: number): Promise<number> {
  const jobs = teamIds.map((id, seed) => async () => {
    for (let step = from; step < to; step++) {
      await runTeamCommand(subject.services.commands, id, scriptedCommand(step, seed), `owner-${seed % 7}`);
    }
    return true;
  });
  return runWithConcurrency(jobs, 10);
}

describe('The worker process projecting the log', () => {
  it('When the worker is killed with SIGKILL while catching up and a new one starts, then every checkpoint reaches its log’s end and the documents equal a rebuild', async () => {
    const subject = await createTestApp();
    const { redis } = subject;
    const { keys, commands } = subject.services;
    const env = { ...testRedisEnv(), REDIS_KEY_PREFIX: subject.config.redisKeyPrefix };
    const workers: ServiceProcess[] = [];
    try {
      const teamIds = teamIdsOverEveryPartition(TEAMS);
      await runWithConcurrency(
        teamIds.map(
          (id, seed) => () =>
            runTeamCommand(
              commands,
              id,
              { type: 'CreateFantasyTeam', data: { name: `Crash ${seed}`, season: '2026' } },
              `owner-${seed % 7}`,
            ),
        ),
        10,
      );
      await runSteps(subject, teamIds, 0, BEFORE_WORKER);

      const doomed = startServiceProcess('workers/main.ts', env);
      workers.push(doomed);
      await doomed.waitForOutput('worker ready', 30_000);
      let appending = true;
      const moreCommands = runSteps(subject, teamIds, BEFORE_WORKER, BEFORE_WORKER + WHILE_WORKER).finally(
        () => (appending = false),
      );

      // Kill it once it has applied something and is still behind the log.
      await eventually(
        async () => {
          const progress = await partitionProgress(redis, keys);
          const moved = progress.some(({ checkpoint }) => checkpoint !== null);
          const behind = progress.some(({ tail, checkpoint }) => tail !== null && checkpoint !== tail);
          return moved && behind;
        },
        20_000,
        5,
      );
      doomed.child.kill('SIGKILL');
      expect(await doomed.exited).toBeNull();
      const killedWhileAppending = appending;
      const atKill = await partitionProgress(redis, keys);

      await moreCommands;
      const final = await partitionProgress(redis, keys);
      expect({
        killedWhileAppending,
        moved: atKill.some(({ checkpoint }) => checkpoint !== null),
        behind: final.some(({ tail, partition }) => tail !== atKill[partition]?.checkpoint),
      }).toEqual({ killedWhileAppending: true, moved: true, behind: true });
      // The dead worker's leases are still there: nothing applies until they expire.
      expect(await caughtUp(redis, keys)).toBe(false);

      const successor = startServiceProcess('workers/main.ts', env);
      workers.push(successor);
      await successor.waitForOutput('worker ready', 30_000);
      // Leases of the dead worker expire after 5 s (DEFAULT_PROJECTOR_OPTIONS.leaseMs).
      await eventually(() => caughtUp(redis, keys), 40_000, 50);

      const progress = await partitionProgress(redis, keys);
      const tails = await Promise.all(
        Array.from({ length: LOG_PARTITIONS }, async (_, partition) => {
          const [last] = await redis.xrevrange(keys.logPartition(partition), '+', '-', 'COUNT', 1);
          return last?.[0] ?? null;
        }),
      );
      expect(progress.map(({ checkpoint }) => checkpoint)).toEqual(tails);
      expect(tails.every((tail) => tail !== null)).toBe(true);

      // Every document is what the write side folded: no event skipped or applied twice.
      const stored = await storedViews(redis, keys, teamIds);
      expect(stored).toEqual(
        await Promise.all(teamIds.map((id) => viewFromRecord(subject.services.store, id))),
      );
      expect(stored.map((view) => view?.version)).toEqual(
        await Promise.all(teamIds.map((id) => streamLength(redis, keys, id))),
      );

      successor.child.kill('SIGTERM');
      expect(await successor.exited).toBe(0);
      expect(successor.stdout()).not.toContain('projector pass failed');

      const documents = await snapshotDocuments(redis, keys);
      expect(Object.keys(documents)).toHaveLength(TEAMS);
      await rebuildProjection(redis, keys, fantasyTeamProjection);
      expect(await snapshotDocuments(redis, keys)).toEqual(documents);
    } finally {
      for (const worker of workers) if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
      await subject.close();
    }
  }, 60_000);
});
