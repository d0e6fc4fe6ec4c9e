import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { brotliCompressSync, constants as zlib, gzipSync } from 'node:zlib';

import { startLocalRedis } from '../scripts/lib/redis-server';
import { median } from './lib/load';
import { cpuSeconds } from './lib/process-cost';
import { ensureBuilt, REPO_ROOT, startServer, stopAll, track } from './lib/processes';
import { machineInfo } from './lib/report';
import { createMember, freshCredentials, serviceEnv } from './lib/service';

/**
 * `npm run bench:import-bombs` (issue 38, item 1): what a role-less Member's hostile import costs
 * the ingress, with the defaults an operator runs (IMPORT_BODY_LIMIT 16mb, IMPORT_MAX_ROWS 10,000):
 * the bomb (16 MB of `{"importData":{"users":[{},{},...]}}`, 5.6 million empty objects) as br
 * and as gzip, and the most the raw-byte scan lets through (as many objects and keys as the bounds
 * allow). Each body on an ingress of its own, started for it, so its peak RSS (VmHWM, /proc) is that
 * body's; CPU from /proc (user + system) per request over BENCH_REQUESTS (default 5) after one
 * warm-up, median of BENCH_ROUNDS (default 3). BENCH_BEFORE_DIR=<a built checkout> measures that
 * commit's ingress too.
 */

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MB = 1024 * 1024;
const MEMBER_PASSWORD = 'import-bombs-member-password';

interface Body {
  readonly label: string;
  readonly encoding: 'br' | 'gzip' | 'identity';
  /** The bytes sent, given a fresh requestId. */
  readonly bytes: () => Buffer;
  readonly inflatedBytes: number;
}

function emptyObjects(requestId: string): string {
  const head = `{"requestId":"${requestId}","importerType":"UserSeeding","importData":{"users":[`;
  const count = Math.floor((16 * MB - 1024 - head.length) / 3);
  return `${head}${Array.from({ length: count }, () => '{}').join(',')}]}}`;
}

/** At the bounds of 10,000 rows: 160,000 objects of four keys each (1.28 million keys and values). */
function atTheBounds(requestId: string): string {
  const user = '{"a":0,"b":0,"c":0,"d":0}';
  const head = `{"requestId":"${requestId}","importerType":"UserSeeding","importData":{"users":[`;
  return `${head}${Array.from({ length: 160_000 }, () => user).join(',')}]}}`;
}

const USERS_HEAD = (requestId: string) =>
  `{"requestId":"${requestId}","importerType":"UserSeeding","importData":{"users":[`;

/** Issue 38's audit: 160,000 objects whose four keys no other object has, within the counts. */
function differentKeys(requestId: string): string {
  const rows = Array.from({ length: 159_990 }, (_, j) => `{"a${j}":1,"b${j}":1,"c${j}":2,"d${j}":3}`);
  return `${USERS_HEAD(requestId)}${rows.join(',')}]}}`;
}

/** Issue 38's audit: 1.28 million different short strings, within the counts. */
function differentShortStrings(requestId: string): string {
  const values = Array.from({ length: 1_280_000 }, (_, j) => `"${j.toString(36)}"`);
  return `${USERS_HEAD(requestId)}${values.join(',')}]}}`;
}

/**
 * The most the bounds let through with short strings: 10,000 rows of twelve different short strings
 * (the bound a row) and a hundred numbers, 124 keys and values a row (the bound is 128).
 */
function shortStringsAtTheBounds(requestId: string): string {
  const row = (i: number) =>
    `{${Array.from({ length: 12 }, (_, k) => `"k${k}":"${(i * 12 + k).toString(36)}"`).join(',')},"n":[${Array.from({ length: 100 }, () => 0).join(',')}]}`;
  return `${USERS_HEAD(requestId)}${Array.from({ length: 10_000 }, (_, i) => row(i)).join(',')}]}}`;
}

const brotli = (text: string) =>
  brotliCompressSync(Buffer.from(text), { params: { [zlib.BROTLI_PARAM_QUALITY]: 11 } });

function bodies(): Body[] {
  const bomb = emptyObjects(randomUUID());
  const bound = atTheBounds(randomUUID());
  // Compressed once: a fresh requestId would need a fresh compression (seconds of br at quality 11);
  // a repeated requestId answers from the same path until the body is read, which is what is measured.
  const br = brotli(bomb);
  const gz = gzipSync(Buffer.from(bomb), { level: 9 });
  return [
    { label: `br bomb (${br.length} bytes)`, encoding: 'br', bytes: () => br, inflatedBytes: bomb.length },
    {
      label: `gzip bomb (${gz.length} bytes)`,
      encoding: 'gzip',
      bytes: () => gz,
      inflatedBytes: bomb.length,
    },
    {
      label: 'at the bounds, uncompressed',
      encoding: 'identity',
      bytes: () => Buffer.from(atTheBounds(randomUUID())),
      inflatedBytes: bound.length,
    },
    ...(
      [
        ['different keys, uncompressed', differentKeys],
        ['different short strings, uncompressed', differentShortStrings],
        ['short strings at the bounds, uncompressed', shortStringsAtTheBounds],
      ] as const
    ).map(([label, make]) => ({
      label,
      encoding: 'identity' as const,
      bytes: () => Buffer.from(make(randomUUID())),
      inflatedBytes: make(randomUUID()).length,
    })),
  ];
}

/** Peak resident memory of a process so far, bytes (VmHWM). */
function peakRss(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmHWM:'));
  return Number(line?.split(/\s+/)[1] ?? 0) * 1024;
}

interface Measured {
  readonly cpuMs: number;
  readonly peakRssMb: number;
  readonly baseRssMb: number;
  readonly statuses: string;
  readonly p50Ms: number;
}

async function measureOne(dir: string, redisUrl: string, body: Body): Promise<Measured> {
  const credentials = freshCredentials();
  const ingress = await startServer({
    name: `ingress-bombs-${randomUUID().slice(0, 8)}`,
    args: [path.join(dir, 'dist', 'ingress', 'main.js')],
    env: serviceEnv({
      redisUrl,
      keyPrefix: `bench-bombs-${randomUUID().slice(0, 8)}:`,
      credentials,
      extra: { LOG_LEVEL: 'warn', AUTH_CACHE_TTL_SECONDS: '3600', IMPORT_BYTES_PER_ACCOUNT_PER_MINUTE: '0' },
    }),
    readyPath: '/readyz',
  });
  try {
    const member = await createMember(ingress, credentials, MEMBER_PASSWORD);
    const send = async () => {
      const sentAt = performance.now();
      const response = await fetch(`${ingress.baseUrl}/api/import`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-encoding': body.encoding,
          authorization: member,
        },
        body: body.bytes(),
      });
      await response.arrayBuffer();
      return { status: response.status, ms: performance.now() - sentAt };
    };
    const baseRss = peakRss(ingress.pid);
    await send(); // warm-up
    const cpuBefore = cpuSeconds(ingress.pid);
    const answers = [];
    for (let i = 0; i < REQUESTS; i++) answers.push(await send());
    const cpuMs = ((cpuSeconds(ingress.pid) - cpuBefore) * 1000) / REQUESTS;
    return {
      cpuMs,
      peakRssMb: peakRss(ingress.pid) / 1e6,
      baseRssMb: baseRss / 1e6,
      statuses: [...new Set(answers.map((a) => a.status))].join('/'),
      p50Ms: median(answers.map((a) => a.ms)),
    };
  } finally {
    await ingress.stop();
  }
}

async function main(): Promise<void> {
  ensureBuilt();
  const redis = track(await startLocalRedis());
  const dirs: [string, string][] = [['this commit', REPO_ROOT]];
  if (process.env.BENCH_BEFORE_DIR) dirs.push(['before', process.env.BENCH_BEFORE_DIR]);
  const measured = new Map<string, Measured[]>();
  const all = bodies();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [label, dir] of dirs) {
      for (const body of all) {
        const key = `${label} | ${body.label}`;
        const m = await measureOne(dir, redis.url, body);
        process.stderr.write(
          `[bench] round ${round} ${key}: ${m.cpuMs.toFixed(0)} ms CPU, peak RSS ${m.peakRssMb.toFixed(0)} MB, ${m.statuses}\n`,
        );
        measured.set(key, [...(measured.get(key) ?? []), m]);
      }
    }
  }
  const machine = machineInfo();
  const lines = [
    `### Import bombs (issue 38)`,
    '',
    `${JSON.stringify(machine)}; ${REQUESTS} requests a round after one warm-up, median of ${ROUNDS} rounds (every round's figure in brackets).`,
    '',
    '| ingress | body (inflated MB) | answer | ingress CPU ms / request | peak RSS MB (before the first body) | p50 ms |',
    '|---|---|---|---:|---:|---:|',
  ];
  for (const [label] of dirs) {
    for (const body of all) {
      const runs = measured.get(`${label} | ${body.label}`) ?? [];
      const fmt = (pick: (m: Measured) => number) =>
        `${median(runs.map(pick)).toFixed(0)} [${runs.map((m) => pick(m).toFixed(0)).join(', ')}]`;
      lines.push(
        `| ${label} | ${body.label} (${(body.inflatedBytes / 1e6).toFixed(1)}) | ${runs[0]?.statuses ?? ''} | ${fmt((m) => m.cpuMs)} | ${fmt((m) => m.peakRssMb)} (${median(runs.map((m) => m.baseRssMb)).toFixed(0)}) | ${fmt((m) => m.p50Ms)} |`,
      );
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

main()
  .catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  })
  .finally(() => void stopAll());
