/**
 * The Prometheus files an operator runs (deploy/prometheus/), checked by Debian's promtool rather than
 * by a parser of ours: the scrape config's syntax, the alert rules, and their unit tests
 * (alerts.test.yml), where each alert fires on the series that should fire it and stays quiet on a
 * healthy one. Then what promtool cannot see: every alert has both kinds of case, says how severe it
 * is, and links a runbook section that docs/operators.md has; the compose file mounts the rules.
 * `.ci/run` installs promtool (Debian's `prometheus` package) where it is missing.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import { parse } from 'yaml';

import { PROJECT_ROOT } from '../helpers/processes';

const PROMETHEUS_DIR = path.join(PROJECT_ROOT, 'deploy', 'prometheus');
const RULES = path.join(PROMETHEUS_DIR, 'alerts.yml');
const RULE_TESTS = path.join(PROMETHEUS_DIR, 'alerts.test.yml');
const SCRAPE_CONFIG = path.join(PROMETHEUS_DIR, 'prometheus.yml');
const MISSING =
  'promtool is not installed: apt-get install prometheus (Debian), or take promtool from a Prometheus release; .ci/run installs it';

interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly labels?: Record<string, string>;
  readonly annotations?: Record<string, string>;
}
interface RuleTests {
  readonly tests: readonly {
    readonly name: string;
    readonly alert_rule_test?: readonly {
      readonly alertname: string;
      readonly exp_alerts: readonly unknown[];
    }[];
  }[];
}

function promtool(...args: string[]): { status: number | null; output: string } {
  const run = spawnSync('promtool', args, { cwd: PROMETHEUS_DIR, encoding: 'utf8' });
  if (run.error) throw new Error(`${MISSING} (${run.error.message})`);
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

const alerts = (): AlertRule[] =>
  (parse(readFileSync(RULES, 'utf8')) as { groups: { rules: AlertRule[] }[] }).groups.flatMap(
    ({ rules }) => rules,
  );

describe('The Prometheus configuration and alert rules', () => {
  it('When promtool checks the scrape config, then its syntax is valid and it loads alerts.yml', () => {
    const check = promtool('check', 'config', '--syntax-only', SCRAPE_CONFIG);
    expect(check).toMatchObject({ status: 0 });
    // --syntax-only reads no file the config names (the token file exists only in the container).
    expect((parse(readFileSync(SCRAPE_CONFIG, 'utf8')) as { rule_files: string[] }).rule_files).toEqual([
      'alerts.yml',
    ]);
  });

  it('When promtool checks the rules and runs their unit tests, then both pass', () => {
    const check = promtool('check', 'rules', RULES);
    expect(check.output).toContain('SUCCESS');
    expect(check.status).toBe(0);
    const tests = promtool('test', 'rules', RULE_TESTS);
    expect(tests.output).toContain('SUCCESS');
    expect(tests.status).toBe(0);
  });

  it('When a rule is weakened, then its unit tests fail: they guard what each alert fires on', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'fts-alerts-'));
    try {
      copyFileSync(RULE_TESTS, path.join(dir, 'alerts.test.yml'));
      const weakened = readFileSync(RULES, 'utf8').replace(
        'max by (projection) (fts_projector_lag_events) > 1000',
        'max by (projection) (fts_projector_lag_events) > 100000',
      );
      expect(weakened).not.toBe(readFileSync(RULES, 'utf8'));
      writeFileSync(path.join(dir, 'alerts.yml'), weakened);
      const run = spawnSync('promtool', ['test', 'rules', 'alerts.test.yml'], { cwd: dir, encoding: 'utf8' });
      expect(run.status).not.toBe(0);
      expect(`${run.stdout}${run.stderr}`).toContain('FtsProjectionLagging');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('When an alert is defined, then its unit tests fire it and keep it quiet on a healthy series', () => {
    const { tests } = parse(readFileSync(RULE_TESTS, 'utf8')) as RuleTests;
    const cases = tests.flatMap((test) => test.alert_rule_test ?? []);
    for (const { alert } of alerts()) {
      const ofAlert = cases.filter(({ alertname }) => alertname === alert);
      expect({ alert, fires: ofAlert.some(({ exp_alerts }) => exp_alerts.length > 0) }).toEqual({
        alert,
        fires: true,
      });
      expect({ alert, quiet: ofAlert.some(({ exp_alerts }) => exp_alerts.length === 0) }).toEqual({
        alert,
        quiet: true,
      });
    }
  });

  it('When an alert fires, then it says how severe it is, what happened, and where its runbook is', () => {
    const operators = readFileSync(path.join(PROJECT_ROOT, 'docs', 'operators.md'), 'utf8');
    // GitHub's anchor of a heading: lower case, spaces to hyphens, other punctuation dropped.
    const anchors = new Set(
      [...operators.matchAll(/^#{2,6} (.+)$/gm)].map(([, heading]) =>
        (heading ?? '')
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const { alert, labels, annotations } of alerts()) {
      expect({ alert, severity: labels?.severity }).toEqual({
        alert,
        severity: expect.stringMatching(/^(page|ticket)$/),
      });
      expect({ alert, summary: annotations?.summary, description: annotations?.description }).toEqual({
        alert,
        summary: expect.any(String),
        description: expect.any(String),
      });
      const runbook = annotations?.runbook ?? '';
      expect({ alert, runbook }).toEqual({
        alert,
        runbook: `docs/operators.md#runbook-${alert.toLowerCase()}`,
      });
      expect({ alert, documented: anchors.has(runbook.split('#')[1] ?? '') }).toEqual({
        alert,
        documented: true,
      });
    }
  });

  it('When compose starts Prometheus, then it mounts every rule file the scrape config names', () => {
    const compose = parse(readFileSync(path.join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8')) as {
      services: { prometheus: { volumes: string[] } };
    };
    const { rule_files: ruleFiles } = parse(readFileSync(SCRAPE_CONFIG, 'utf8')) as { rule_files: string[] };
    for (const file of ruleFiles) {
      expect(compose.services.prometheus.volumes).toContain(
        `./deploy/prometheus/${file}:/etc/prometheus/${file}:ro`,
      );
    }
  });
});
