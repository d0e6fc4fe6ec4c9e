import { randomUUID } from 'node:crypto';

import keySlot from 'cluster-key-slot';
import { Redis } from 'ioredis';

import { type LocalRedisCluster, startLocalRedisCluster } from '../scripts/lib/redis-cluster';
import { SYSTEM_ACTOR } from '../shared/accounts/account';
import { loadConfig } from '../shared/config';
import { createCoreServices } from '../shared/core-services';
import { createLogger } from '../shared/logger';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';
import { LOG_PARTITIONS, partitionOf, partitionTag } from '../shared/redis/partitions';
import { bearerToken, type Exchange, exchange } from '../test/helpers/http-client';
import { killAll, startIngressProcess, startServiceProcess } from '../test/helpers/processes';
import { machineInfo } from './lib/report';

/**
 * `npm run bench:cluster-failover`: what a master's death costs the commands (issue 33, ADR 0030).
 * A private Redis Cluster of 3 masters and 3 replicas on loopback (cluster-node-timeout 1 s), a real
 * ingress and worker process on it, BENCH_CLIENTS accounts (default 16) each sending Link/Unlink with
 * a requestId to its own teams (BENCH_TEAMS in all, default 300) one at a time; a command answered
 * 503 is parked and resent, same requestId, when its client comes back to that team. After
 * BENCH_WARMUP_S, the replica of the master holding the most partitions is cut off for 1 s (writes
 * it never gets), then the master is killed with SIGKILL; the load goes on through the election,
 * the dead node comes back as a replica, and the load goes on BENCH_AFTER_S more. Then every team's
 * stream is read and each command answered 200 looked for in it. Once with WRITE_DURABILITY=local,
 * once with replicated. Reports per partition how long its commands failed or waited over 500 ms
 * from the kill on, the longest wait and the 503s of commands whose team and caller are on surviving
 * masters (and every command's wait before the kill, for scale), and the acknowledged commands lost.
 */

const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 16);
const TEAMS = Number(process.env.BENCH_TEAMS ?? 300);
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 5);
const AFTER_S = Number(process.env.BENCH_AFTER_S ?? 5);
/**
 * `cluster-require-full-coverage`: with `yes` (Redis's default) every master refuses every command
 * (CLUSTERDOWN) from the moment the dead master is marked failed until its replica is elected, which
 * stalls the surviving partitions too; `no` is what ADR 0030 asks operators to set.
 */
const FULL_COVERAGE = process.env.BENCH_FULL_COVERAGE === 'yes' ? 'yes' : 'no';
const REPLICA_BEHIND_MS = 1_000;
const PASSWORD = 'cluster-failover-bench-password';
const TEAM = 'fantasy-team';

interface Client {
  readonly userId: string;
  readonly authorization: string;
  readonly teams: { readonly id: string; linked: boolean; parked?: string }[];
}

/** One HTTP attempt of the load. */
interface Attempt {
  readonly teamId: string;
  readonly callerUserId: string;
  readonly requestId: string;
  readonly sentAt: number;
  readonly answer: Exchange;
}

interface RunFigures {
  readonly durability: string;
  readonly victimPartitions: number[];
  /** Per partition, the time (ms) its commands failed or waited over 500 ms, from the kill on. */
  readonly gapMs: Map<number, number>;
  /** Every command's wait before the replica was cut off: what the machine gives at all. */
  readonly beforeP99Ms: number;
  readonly beforeLongestMs: number;
  readonly survivingAttempts: number;
  readonly survivingLongestMs: number;
  readonly survivingP99Ms: number;
  readonly survivingOver500: number;
  readonly surviving503: number;
  readonly attempts: number;
  readonly answered503: number;
  readonly answered500: number;
  readonly noAnswer: number;
  readonly acknowledged: number;
  readonly lost: number;
  readonly electionMs: number;
  readonly failOpens: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error('timed out');
    await sleep(100);
  }
}

/** master port -> the slot ranges it serves, as `node` sees them. */
async function slotOwners(node: Redis): Promise<Array<{ from: number; to: number; port: number }>> {
  const ranges = await node.cluster('SLOTS');
  return ranges.map(([from, to, master]) => ({ from, to, port: Number(master?.[1]) }));
}

function portOfPartition(
  owners: Array<{ from: number; to: number; port: number }>,
  partition: number,
): number {
  const slot = keySlot(partitionTag(partition));
  return owners.find(({ from, to }) => from <= slot && slot <= to)?.port ?? -1;
}

async function runOnce(cluster: LocalRedisCluster, durability: 'local' | 'replicated'): Promise<RunFigures> {
  await cluster.waitUntilHealthy(60_000);
  for (const { port } of cluster.nodes) {
    const node = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1 });
    await node.config('SET', 'cluster-require-full-coverage', FULL_COVERAGE);
    node.disconnect();
  }
  const env = {
    REDIS_CLUSTER_NODES: cluster.nodeList,
    REDIS_URL: '',
    REDIS_KEY_PREFIX: `bench-failover-${randomUUID().slice(0, 8)}:`,
    WRITE_DURABILITY: durability,
    METRICS_TOKEN: 'cluster-failover-bench-metrics-token',
    JWT_SECRET: 'cluster-failover-bench-jwt-secret-of-32-chars',
  };
  const logger = createLogger({ level: 'warn', processRole: 'bench' });
  const config = loadConfig(env, 'ingress');
  const redis = createRedisConnection(config.redis, 'request', logger);
  await waitForRedis(redis, logger);
  const core = createCoreServices(config, redis);
  const ingress = await startIngressProcess(env, 60_000);
  const worker = startServiceProcess('workers/main.ts', env);
  const probes: Redis[] = [];
  try {
    await worker.waitForOutput('worker ready', 60_000);
    const clients: Client[] = [];
    for (let index = 0; index < CLIENTS; index += 1) {
      const email = `failover-${index}-${randomUUID().slice(0, 8)}@example.com`;
      const created = await core.accounts.createUser(
        SYSTEM_ACTOR,
        { email, password: PASSWORD, userType: 'Human', roles: ['Member'] },
        { requestId: null, correlationId: 'bench' },
      );
      clients.push({
        userId: created.userId,
        authorization: await bearerToken(ingress.baseUrl, email, PASSWORD),
        teams: [],
      });
    }
    for (let index = 0; index < TEAMS; index += 1) {
      const client = clients[index % CLIENTS];
      if (!client) continue;
      const id = randomUUID();
      const answer = await exchange(ingress.baseUrl, 'POST', '/api/command', {
        authorization: client.authorization,
        body: { commandType: 'CreateFantasyTeam', command: { aggregateRootId: id, name: 'Failover' } },
      });
      if (!answer.ok || answer.status !== 200) throw new Error(`team not created: ${JSON.stringify(answer)}`);
      client.teams.push({ id, linked: false });
    }

    const attempts: Attempt[] = [];
    let stopping = false;
    const drive = async (client: Client) => {
      for (let turn = 0; !stopping; turn += 1) {
        const team = client.teams[turn % client.teams.length];
        if (!team) return;
        const requestId = team.parked ?? randomUUID();
        const body = team.linked
          ? { commandType: 'UnlinkFantasyTeam', command: { aggregateRootId: team.id } }
          : {
              commandType: 'LinkFantasyTeam',
              command: { aggregateRootId: team.id, fantasyTeamExternalId: 7, fantasyUserId: 8 },
            };
        const sentAt = Date.now();
        const answer = await exchange(ingress.baseUrl, 'POST', '/api/command', {
          authorization: client.authorization,
          body: { ...body, requestId },
          timeoutMs: 15_000,
        });
        attempts.push({ teamId: team.id, callerUserId: client.userId, requestId, sentAt, answer });
        if (!answer.ok || answer.status === 503) {
          team.parked = requestId;
          continue;
        }
        // 200 applied it; 400 means a 200 was lost with the master: either way it is now the other way.
        team.parked = undefined;
        team.linked = !team.linked;
      }
    };
    const loops = clients.map((client) => drive(client));

    await sleep(WARMUP_S * 1_000);
    const survivorPort = cluster.nodes[0]?.port ?? 0;
    const probe = new Redis(survivorPort, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
    probes.push(probe);
    const owners = await slotOwners(probe);
    const partitionsByPort = new Map<number, number[]>();
    for (let partition = 0; partition < LOG_PARTITIONS; partition += 1) {
      const port = portOfPartition(owners, partition);
      partitionsByPort.set(port, [...(partitionsByPort.get(port) ?? []), partition]);
    }
    const [victim, victimPartitions] = [...partitionsByPort.entries()].sort(
      ([, a], [, b]) => b.length - a.length,
    )[0] ?? [0, []];
    const other = cluster.nodes.find(({ port }) => port !== victim)?.port ?? 0;
    const liveProbe = new Redis(other, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
    probes.push(liveProbe);
    // Its replica falls behind first (cut off and kept off): what the master answers from here on
    // exists on the master alone, as on a slow link.
    const victimNode = new Redis(victim, '127.0.0.1', { lazyConnect: true, maxRetriesPerRequest: 1 });
    probes.push(victimNode);
    await victimNode.config('SET', 'requirepass', randomUUID());
    await victimNode.client('KILL', 'TYPE', 'replica');
    await sleep(REPLICA_BEHIND_MS);
    const killedAt = Date.now();
    await cluster.stopNode(victim, 'SIGKILL');
    victimNode.disconnect();
    await until(async () => {
      const ports = new Set((await slotOwners(liveProbe)).map(({ port }) => port));
      return !ports.has(victim) && (await liveProbe.cluster('INFO')).includes('cluster_state:ok');
    }, 30_000);
    const electionMs = Date.now() - killedAt;
    await sleep(2_000);
    await cluster.startNode(victim);
    await cluster.waitUntilHealthy(60_000);
    await sleep(AFTER_S * 1_000);
    stopping = true;
    await Promise.all(loops);

    // Every stream, read after: which acknowledged request ids survived.
    const acknowledged = new Map<string, string>();
    for (const attempt of attempts)
      if (attempt.answer.ok && attempt.answer.status === 200)
        acknowledged.set(attempt.requestId, attempt.teamId);
    const applied = new Set<string>();
    for (const client of clients)
      for (const team of client.teams)
        for (const event of await core.store.readStream(TEAM, team.id))
          applied.add(String(event.metadata.requestId));
    const lost = [...acknowledged.keys()].filter((requestId) => !applied.has(requestId)).length;

    const victimSet = new Set(victimPartitions);
    const surviving = (attempt: Attempt) =>
      !victimSet.has(partitionOf(attempt.teamId)) && !victimSet.has(partitionOf(attempt.callerUserId));
    // From the kill until the cluster is healthy again, plus the slot map's 2 s refresh.
    const inFailover = (attempt: Attempt) => attempt.sentAt + attempt.answer.ms >= killedAt;
    const survivingAttempts = attempts.filter((attempt) => surviving(attempt) && inFailover(attempt));
    // Per partition, the time covered by attempts on its teams that failed (503, no answer) or
    // took over 500 ms: how long it was unavailable to a client that sends when it can.
    const unavailable = (attempt: Attempt) =>
      !attempt.answer.ok || attempt.answer.status === 503 || attempt.answer.ms > 500;
    const gapMs = new Map<number, number>();
    for (let partition = 0; partition < LOG_PARTITIONS; partition += 1) {
      const spans = attempts
        .filter((attempt) => partitionOf(attempt.teamId) === partition && inFailover(attempt))
        .filter(unavailable)
        .map((attempt) => [attempt.sentAt, attempt.sentAt + attempt.answer.ms] as const)
        .sort(([a], [b]) => a - b);
      let covered = 0;
      let reach = 0;
      for (const [from, to] of spans) {
        covered += Math.max(0, to - Math.max(from, reach));
        reach = Math.max(reach, to);
      }
      gapMs.set(partition, covered);
    }
    const before = attempts
      .filter((attempt) => attempt.sentAt + attempt.answer.ms < killedAt - REPLICA_BEHIND_MS)
      .map((attempt) => attempt.answer.ms)
      .sort((a, b) => a - b);
    const statusOf = (attempt: Attempt) => (attempt.answer.ok ? attempt.answer.status : 0);
    const metrics = await exchange(ingress.baseUrl, 'GET', '/metrics', {
      authorization: `Bearer ${env.METRICS_TOKEN}`,
    });
    const failOpens = Number(
      /^fts_rate_limit_fail_open_total (\d+)/m.exec(metrics.ok ? String(metrics.body) : '')?.[1] ?? 0,
    );
    return {
      durability: `${durability} (full coverage ${FULL_COVERAGE})`,
      victimPartitions,
      gapMs,
      beforeP99Ms: before[Math.floor(before.length * 0.99)] ?? 0,
      beforeLongestMs: before.at(-1) ?? 0,
      survivingAttempts: survivingAttempts.length,
      survivingLongestMs: Math.max(0, ...survivingAttempts.map((attempt) => attempt.answer.ms)),
      survivingP99Ms:
        survivingAttempts.map((attempt) => attempt.answer.ms).sort((a, b) => a - b)[
          Math.floor(survivingAttempts.length * 0.99)
        ] ?? 0,
      survivingOver500: survivingAttempts.filter((attempt) => attempt.answer.ms > 500).length,
      surviving503: survivingAttempts.filter((attempt) => statusOf(attempt) === 503).length,
      attempts: attempts.length,
      answered503: attempts.filter((attempt) => statusOf(attempt) === 503).length,
      answered500: attempts.filter((attempt) => statusOf(attempt) >= 500 && statusOf(attempt) !== 503).length,
      noAnswer: attempts.filter((attempt) => !attempt.answer.ok).length,
      acknowledged: acknowledged.size,
      lost,
      electionMs,
      failOpens,
    };
  } finally {
    for (const probe of probes) probe.disconnect();
    await killAll(ingress.process, worker);
    await core.close();
    await closeConnections(redis);
    logger.close();
  }
}

function report(runs: readonly RunFigures[]): string {
  const lines = [
    '| WRITE_DURABILITY | election (ms) | commands sent | 200 acknowledged, lost | 503 | 5xx else, no answer | before the kill: p99, longest (ms) | surviving-master commands from the kill on: sent, 503, > 500 ms, p99, longest (ms) | rate limit fail-opens |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    ...runs.map(
      (run) =>
        `| ${run.durability} | ${run.electionMs} | ${run.attempts} | ${run.acknowledged}, ${run.lost} | ${run.answered503} | ${run.answered500}, ${run.noAnswer} | ${run.beforeP99Ms}, ${run.beforeLongestMs} | ${run.survivingAttempts}, ${run.surviving503}, ${run.survivingOver500}, ${run.survivingP99Ms}, ${run.survivingLongestMs} | ${run.failOpens} |`,
    ),
    '',
    '| WRITE_DURABILITY | ' + Array.from({ length: LOG_PARTITIONS }, (_, p) => `p${p}`).join(' | ') + ' |',
    '| --- |' + ' --- |'.repeat(LOG_PARTITIONS),
    ...runs.map(
      (run) =>
        `| ${run.durability}: unavailable from the kill on (ms; **dead master's**) | ` +
        Array.from({ length: LOG_PARTITIONS }, (_, p) =>
          run.victimPartitions.includes(p) ? `**${run.gapMs.get(p) ?? 0}**` : String(run.gapMs.get(p) ?? 0),
        ).join(' | ') +
        ' |',
    ),
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  const cluster = await startLocalRedisCluster({ masters: 3, replicasPerMaster: 1, nodeTimeoutMs: 1_000 });
  try {
    const runs: RunFigures[] = [];
    for (const durability of ['local', 'replicated'] as const) {
      runs.push(await runOnce(cluster, durability));
      process.stdout.write(`[cluster-failover] ${durability} done\n`);
    }
    process.stdout.write(`\n${JSON.stringify(machineInfo())}\n\n${report(runs)}\n`);
  } finally {
    await cluster.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(
    `[cluster-failover] ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
  );
  process.exitCode = 1;
});
