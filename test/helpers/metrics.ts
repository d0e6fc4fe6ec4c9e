/** One sample line of a Prometheus text exposition: `name{label="value",...} value`. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * Reads the samples of a text exposition (version 0.0.4, what prom-client writes). A few lines
 * suffice for the subset prom-client emits (no timestamps, no exemplars); the tests assert on
 * values, and a line this cannot read fails loudly instead of being skipped.
 */
export function parseExposition(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const match = SAMPLE_LINE.exec(line);
      if (!match?.[1] || match[3] === undefined) throw new Error(`not a sample line: ${line}`);
      const labels: Record<string, string> = {};
      for (const [, name, value] of (match[2] ?? '').matchAll(LABEL)) {
        if (name !== undefined && value !== undefined) labels[name] = value.replace(/\\(.)/g, '$1');
      }
      return { name: match[1], labels, value: Number(match[3]) };
    });
}

/** The samples named `name` whose labels include every one of `labels`. */
export function samplesOf(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): Sample[] {
  return samples.filter(
    (sample) =>
      sample.name === name &&
      Object.entries(labels).every(([label, value]) => sample.labels[label] === value),
  );
}

/** The sum of the samples named `name` whose labels include every one of `labels` (0 when none). */
export function sampleSum(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number {
  return samplesOf(samples, name, labels).reduce((sum, sample) => sum + sample.value, 0);
}
