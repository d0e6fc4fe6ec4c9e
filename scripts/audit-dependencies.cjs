#!/usr/bin/env node
/**
 * `npm run audit`: `npm audit --omit=dev`, failing on any high or critical finding in the
 * production dependencies. When the registry's advisory service cannot be asked at all (offline CI,
 * a mirror without the audit endpoints), it says so loudly and exits 0: an unreachable advisory
 * database is not a finding, and blocking every build on it would teach people to skip the check.
 * AUDIT_REQUIRED=1 turns that case into a failure too.
 */
'use strict';
const { spawnSync } = require('node:child_process');

const run = spawnSync('npm', ['audit', '--omit=dev', '--json'], { encoding: 'utf8', shell: false });
let report;
try {
  report = JSON.parse(run.stdout);
} catch {
  report = undefined;
}

const counts = report?.metadata?.vulnerabilities;
if (!counts) {
  const reason = report?.message ?? report?.error?.summary ?? (run.stderr.trim() || 'no answer');
  process.stderr.write(`[audit] WARNING: the advisory service could not be asked: ${reason}\n`);
  process.exit(process.env.AUDIT_REQUIRED === '1' ? 1 : 0);
}

const blocking = (counts.high ?? 0) + (counts.critical ?? 0);
process.stdout.write(
  `[audit] production dependencies: ${counts.critical ?? 0} critical, ${counts.high ?? 0} high, ` +
    `${counts.moderate ?? 0} moderate, ${counts.low ?? 0} low\n`,
);
if (blocking > 0) {
  for (const [name, finding] of Object.entries(report.vulnerabilities ?? {})) {
    if (finding.severity === 'high' || finding.severity === 'critical') {
      process.stdout.write(`[audit] ${finding.severity}: ${name} ${finding.range ?? ''}\n`);
    }
  }
  process.exit(1);
}
