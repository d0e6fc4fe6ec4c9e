// The baseline of the import bench: bare argon2id hashing, the one cost an import of users with
// passwords cannot avoid. Hashes with @node-rs/argon2 and the service's own parameters (read from the
// compiled service, so the two can never differ), keeping IN_FLIGHT hashes running at once, as an
// import keeps IMPORT_COMMAND_CONCURRENCY commands running. Hashes for WARMUP_SECONDS (discarded), then
// counts hashes finished over DURATION_SECONDS and prints one JSON line:
// {"hashes":N,"seconds":S,"hashesPerSecond":R,"inFlight":K,"parameters":{...}}.
'use strict';
const { randomBytes } = require('node:crypto');
const path = require('node:path');
const { hash } = require('@node-rs/argon2');
const { ARGON2_PARAMETERS } = require(
  path.join(__dirname, '..', '..', 'dist', 'shared', 'accounts', 'argon2-password-hasher.js'),
);

const inFlight = Number(process.env.IN_FLIGHT ?? 4);
const warmupSeconds = Number(process.env.WARMUP_SECONDS ?? 1);
const durationSeconds = Number(process.env.DURATION_SECONDS ?? 8);

async function main() {
  // Passwords like the bench's imported users' (20 characters), one per hash.
  const password = () => randomBytes(15).toString('base64url');
  const measureFrom = Date.now() + warmupSeconds * 1000;
  const measureTo = measureFrom + durationSeconds * 1000;
  let hashes = 0;
  const lane = async () => {
    while (Date.now() < measureTo) {
      await hash(password(), ARGON2_PARAMETERS);
      const now = Date.now();
      if (now >= measureFrom && now < measureTo) hashes += 1;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  process.stdout.write(
    `${JSON.stringify({
      hashes,
      seconds: durationSeconds,
      hashesPerSecond: hashes / durationSeconds,
      inFlight,
      parameters: ARGON2_PARAMETERS,
    })}\n`,
  );
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : String(error)}\n`);
  process.exit(1);
});
