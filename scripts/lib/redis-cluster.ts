import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { freePort } from './free-port';
import { type LocalRedis, startLocalRedis } from './redis-server';

const run = promisify(execFile);

const SLOTS = 16_384;
const HOST = '127.0.0.1';

/** One node's two ports: clients talk on `port`, nodes gossip on `busPort`. */
export interface ClusterNodePorts {
  readonly port: number;
  readonly busPort: number;
}

/** A Redis Cluster of private redis-server processes on loopback, which this code may stop. */
export interface LocalRedisCluster {
  readonly nodes: readonly ClusterNodePorts[];
  /** `127.0.0.1:p1,127.0.0.1:p2,...`: what REDIS_CLUSTER_NODES takes. */
  readonly nodeList: string;
  /** Where the nodes keep their cluster state (nodes-<port>.conf). */
  readonly dataDir: string;
  /**
   * Stops the node on `port` (SIGKILL: dead at once, as a crashed server, with no goodbye to the
   * others); its replica, if any, is elected in its place after the node timeout.
   */
  stopNode(port: number, signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /**
   * Starts a stopped node again on its port: it finds its cluster in its state file and rejoins (a
   * master that was failed over rejoins as a replica of the node elected in its place).
   */
  startNode(port: number): Promise<void>;
  /** Resolves once every node sees the whole cluster with every slot served and every replica linked. */
  waitUntilHealthy(timeoutMs: number): Promise<void>;
  /** Stops every node; removes `dataDir` too when it was a temporary directory made here. */
  stop(): Promise<void>;
}

export interface LocalRedisClusterOptions {
  /** Masters (each owns a third of the slots for three). Default 3. */
  readonly masters?: number;
  /**
   * Replicas of each master (`redis-cli --cluster create --cluster-replicas`), waited for until
   * each one's link to its master is up. Default 0.
   */
  readonly replicasPerMaster?: number;
  /**
   * Keep cluster state here (and leave it on stop). Started again with the same `dataDir` and
   * `nodes`, the nodes find their cluster in their state files and form it again without a create.
   */
  readonly dataDir?: string;
  /** The ports of a cluster stopped before; fresh free ports when absent. */
  readonly nodes?: readonly ClusterNodePorts[];
  /** How long a node may be silent before the others count it as failed. Default 2000 ms. */
  readonly nodeTimeoutMs?: number;
  /** Every node wants it from clients (`requirepass`) and from each other (`masterauth`). */
  readonly password?: string;
}

/** Two distinct free loopback ports. The bus port is set explicitly (Redis 7 `cluster-port`),
 * so it need not be port + 10000, which may be taken or above 65535. */
async function freeNodePorts(taken: Set<number>): Promise<ClusterNodePorts> {
  const pick = async (): Promise<number> => {
    for (;;) {
      const port = await freePort();
      if (!taken.has(port)) {
        taken.add(port);
        return port;
      }
    }
  };
  return { port: await pick(), busPort: await pick() };
}

function startNode(
  ports: ClusterNodePorts,
  dataDir: string,
  nodeTimeoutMs: number,
  password: string | undefined,
): Promise<LocalRedis> {
  return startLocalRedis({
    port: ports.port,
    ...(password === undefined ? {} : { password }),
    extraArgs: [
      ...(password === undefined ? [] : ['--masterauth', password]),
      '--dir',
      dataDir,
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      path.join(dataDir, `nodes-${ports.port}.conf`),
      '--cluster-port',
      String(ports.busPort),
      '--cluster-node-timeout',
      String(nodeTimeoutMs),
    ],
  });
}

/** redis-cli's environment: REDISCLI_AUTH is how it takes a password without a warning. */
function cliEnv(password: string | undefined): NodeJS.ProcessEnv {
  return password === undefined ? process.env : { ...process.env, REDISCLI_AUTH: password };
}

/**
 * One node's answer to an INFO-like command (`CLUSTER INFO`, `INFO replication`) as a map of its
 * `name:value` lines.
 */
async function nodeInfo(
  port: number,
  command: readonly string[],
  password?: string,
): Promise<Map<string, string>> {
  const { stdout } = await run('redis-cli', ['-h', HOST, '-p', String(port), ...command], {
    timeout: 5_000,
    env: cliEnv(password),
  });
  return new Map(
    stdout
      .split(/\r?\n/)
      .map((line) => line.split(':'))
      .filter((pair): pair is [string, string] => pair.length === 2)
      .map(([name, value]) => [name, value.trim()]),
  );
}

/** One node's `CLUSTER INFO` as a map (cluster_state, cluster_slots_ok, cluster_known_nodes...). */
function clusterInfo(port: number, password?: string): Promise<Map<string, string>> {
  return nodeInfo(port, ['cluster', 'info'], password);
}

/** True when every node sees a whole cluster of `count` nodes with every slot served. */
async function clusterIsWhole(
  nodes: readonly ClusterNodePorts[],
  password: string | undefined,
): Promise<boolean> {
  const infos = await Promise.all(nodes.map(({ port }) => clusterInfo(port, password)));
  return infos.every(
    (info) =>
      info.get('cluster_state') === 'ok' &&
      info.get('cluster_slots_ok') === String(SLOTS) &&
      info.get('cluster_known_nodes') === String(nodes.length),
  );
}

async function waitUntilWhole(
  nodes: readonly ClusterNodePorts[],
  timeoutMs: number,
  password: string | undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await clusterIsWhole(nodes, password))) {
    if (Date.now() > deadline) {
      const states = await Promise.all(
        nodes.map(async ({ port }) => (await clusterInfo(port, password)).get('cluster_state')),
      );
      throw new Error(
        `the cluster did not reach cluster_state:ok within ${timeoutMs} ms (states: ${states.join(', ')})`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** One node's `INFO replication` as a map (role, master_link_status, connected_slaves...). */
function replicationInfo(port: number, password?: string): Promise<Map<string, string>> {
  return nodeInfo(port, ['info', 'replication'], password);
}

/** Waits until every replica's link to its master is up (its first sync done). */
async function waitUntilReplicasLinked(
  nodes: readonly ClusterNodePorts[],
  timeoutMs: number,
  password: string | undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const infos = await Promise.all(nodes.map(({ port }) => replicationInfo(port, password)));
    const linked = infos.every(
      (info) => info.get('role') === 'master' || info.get('master_link_status') === 'up',
    );
    if (linked) return;
    if (Date.now() > deadline)
      throw new Error(`the replicas did not link to their masters within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Starts `masters` redis-server processes (and `replicasPerMaster` replicas of each) in cluster mode
 * on free loopback ports, joins them with `redis-cli --cluster create` (unless their state files
 * already hold the cluster), and resolves once every node reports cluster_state:ok (and every
 * replica's link is up). Nothing is persisted but the cluster state.
 */
export async function startLocalRedisCluster(
  options: LocalRedisClusterOptions = {},
): Promise<LocalRedisCluster> {
  const replicasPerMaster = options.replicasPerMaster ?? 0;
  const nodeCount = options.nodes?.length ?? (options.masters ?? 3) * (1 + replicasPerMaster);
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(path.join(tmpdir(), 'fts-redis-cluster-')));
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 2_000;
  const servers: LocalRedis[] = [];
  const stop = async () => {
    await Promise.all(servers.map((server) => server.stop()));
    if (ownDir) await rm(dataDir, { recursive: true, force: true });
  };

  try {
    const taken = new Set<number>();
    const nodes: ClusterNodePorts[] = [];
    for (let i = 0; i < nodeCount; i++) {
      const given = options.nodes?.[i];
      // A free port can be taken by someone else before redis-server binds it: try fresh ones.
      for (let attempt = 1; ; attempt++) {
        const ports = given ?? (await freeNodePorts(taken));
        try {
          servers.push(await startNode(ports, dataDir, nodeTimeoutMs, options.password));
          nodes.push(ports);
          break;
        } catch (error) {
          if (given || attempt >= 5) throw error;
        }
      }
    }

    const reformed =
      options.nodes !== undefined &&
      (await clusterInfo(nodes[0]?.port ?? 0, options.password)).get('cluster_known_nodes') ===
        String(nodeCount);
    if (!reformed) {
      await run(
        'redis-cli',
        [
          '--cluster',
          'create',
          ...nodes.map(({ port }) => `${HOST}:${port}`),
          '--cluster-replicas',
          String(replicasPerMaster),
          '--cluster-yes',
        ],
        { timeout: 30_000, env: cliEnv(options.password) },
      );
    }
    await waitUntilWhole(nodes, 30_000, options.password);
    if (replicasPerMaster > 0) await waitUntilReplicasLinked(nodes, 30_000, options.password);
    const serverOn = (port: number) => servers.find((server) => server.port === port);
    return {
      nodes,
      nodeList: nodes.map(({ port }) => `${HOST}:${port}`).join(','),
      dataDir,
      stop,
      async stopNode(port, signal = 'SIGKILL') {
        await serverOn(port)?.stop(signal);
      },
      async startNode(port) {
        const ports = nodes.find((node) => node.port === port);
        if (!ports) throw new Error(`no node of this cluster listens on ${port}`);
        const index = servers.findIndex((server) => server.port === port);
        servers[index] = await startNode(ports, dataDir, nodeTimeoutMs, options.password);
      },
      async waitUntilHealthy(timeoutMs) {
        await waitUntilWhole(nodes, timeoutMs, options.password);
        await waitUntilReplicasLinked(nodes, timeoutMs, options.password);
      },
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
