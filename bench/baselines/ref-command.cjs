// ref-command (issue 22): ref-read (bench/baselines/ref-read.cjs: Express 5, express.json(), an
// HS256 jsonwebtoken verify with a KeyObject made once) plus the two Redis round trips a locked,
// fenced append needs, and nothing else:
//   1. one Lua script takes the aggregate's lock (SET NX PX) and loads its record (HMGET);
//   2. one Lua script checks the version fence (XLEN), appends the event to the aggregate's
//      stream and to its log partition (XADD, XADD), writes the record (HSET) and releases the
//      lock if still the caller's (GET, DEL).
// Its keys share one hash tag per aggregate, as the service's do. The event is an envelope of the
// service's shape (an id, type, aggregate, version, time, the command's fields, the caller). No
// token cache, no account lookup, no rate limit, no request id, no metrics, no log, no schema
// validation, no domain rules. The ioredis connection is configured as the service's request
// connection (auto-pipelining, no offline queue). Listens on PORT and HOST; REDIS_URL,
// REDIS_KEY_PREFIX, JWT_SECRET, JWT_ISSUER and JWT_AUDIENCE as the service reads them. Prints
// {"message":"baseline listening","port":N} once it listens.
'use strict';
const { createSecretKey, randomUUID } = require('node:crypto');
const express = require('express');
const jwt = require('jsonwebtoken');
const { Redis } = require('ioredis');
const { LOCK_AND_LOAD, APPEND_AND_UNLOCK } = require('./ref-command-scripts.cjs');

const secret = createSecretKey(Buffer.from(process.env.JWT_SECRET ?? '', 'utf8'));
const verifyOptions = {
  algorithms: ['HS256'],
  issuer: process.env.JWT_ISSUER ?? 'fantasy-team-service',
  audience: process.env.JWT_AUDIENCE ?? 'fantasy-team-api',
};
const prefix = process.env.REDIS_KEY_PREFIX ?? 'ref-command:';
const LOCK_TTL_MS = 5_000;
const AGGREGATE_TYPE = 'FantasyTeam';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 1,
  commandTimeout: 2_000,
  enableAutoPipelining: true,
});
redis.defineCommand('lockAndLoad', { numberOfKeys: 2, lua: LOCK_AND_LOAD });
redis.defineCommand('appendAndUnlock', { numberOfKeys: 4, lua: APPEND_AND_UNLOCK });

/** The service's partitioning (shared/redis/partitions.ts): FNV-1a of the id, 16 partitions. */
function partitionOf(id) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    hash ^= id.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % 16;
}

function claimsOf(req) {
  const header = req.headers.authorization;
  if (header === undefined || !header.startsWith('Bearer ')) return undefined;
  try {
    return jwt.verify(header.slice(7), secret, verifyOptions);
  } catch {
    return undefined;
  }
}

const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.use(express.json());

app.post('/api/command', async (req, res) => {
  const claims = claimsOf(req);
  if (!claims) {
    res.status(401).json({ status: 401 });
    return;
  }
  const { commandType, command } = req.body;
  const id = String(command.aggregateRootId).toLowerCase();
  const tag = `{p${partitionOf(id)}}`;
  const lock = `${prefix}${tag}:lock:${AGGREGATE_TYPE}:${id}`;
  const record = `${prefix}${tag}:record:${AGGREGATE_TYPE}:${id}`;
  const token = randomUUID();
  try {
    const [taken, version] = await redis.lockAndLoad(lock, record, token, LOCK_TTL_MS);
    if (taken !== 1) {
      res.status(409).json({ commandType, errorCode: 'AGGREGATE_BUSY' });
      return;
    }
    const expected = Number(version ?? 0);
    const data = { ...command, aggregateRootId: id };
    const envelope = JSON.stringify({
      eventId: randomUUID(),
      eventType: commandType === 'LinkFantasyTeam' ? 'FantasyTeamLinked' : 'FantasyTeamUnlinked',
      aggregateType: AGGREGATE_TYPE,
      aggregateId: id,
      version: expected + 1,
      occurredAt: new Date().toISOString(),
      data,
      metadata: { userId: claims.sub },
    });
    const written = await redis.appendAndUnlock(
      `${prefix}${tag}:stream:${AGGREGATE_TYPE}:${id}`,
      `${prefix}${tag}:log`,
      record,
      lock,
      expected,
      token,
      envelope,
      JSON.stringify(data),
    );
    if (written < 0) {
      res.status(409).json({ commandType, errorCode: 'CONCURRENCY_CONFLICT' });
      return;
    }
    res.json({ commandType, aggregateRootId: id, success: true, errorCode: null, version: written });
  } catch (error) {
    res.status(503).json({ message: String(error) });
  }
});

const server = app.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1', (error) => {
  if (error) throw error;
  process.stdout.write(`${JSON.stringify({ message: 'baseline listening', port: server.address().port })}\n`);
});

process.on('SIGTERM', () => {
  server.close(() => {
    redis.quit().finally(() => process.exit(0));
  });
  server.closeAllConnections();
});
