import { performance } from 'node:perf_hooks';

import { type LoadResult, percentile, reportRun, summarise } from './load';
import type { ComparisonRow } from './report';
import { JSON_HEADERS } from './service';

/** A read with minVersion slower than this counts as an error sample (it would be a 503 anyway). */
const GIVE_UP_MS = 5_000;

interface ProbeTeam {
  readonly id: string;
  linked: boolean;
}

interface Sample {
  readonly commandMs: number;
  readonly readMs?: number;
}

/**
 * Read your own writes (ADR 0019), measured one request at a time on an otherwise idle service:
 * a command alone, and a command followed at once by GetFantasyTeam with `minVersion` set to the
 * answer's `version` (which waits, if it must, for the projector's announcement). Alternated
 * sample by sample on the same teams, so both see the same machine. The read is counted only when
 * it answered 200 with the team at that version; anything else is an error sample.
 */
export class ReadYourWritesProbe {
  private nextLinkId = 1;
  private readonly runs = { command: [] as LoadResult[], both: [] as LoadResult[], read: [] as LoadResult[] };

  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
    private readonly teams: readonly ProbeTeam[],
    private readonly samples: number,
  ) {}

  /** One round: `samples` pairs (command alone, command then read). */
  async round(round: number): Promise<void> {
    const alone: Sample[] = [];
    const paired: Sample[] = [];
    let errors = 0;
    for (let i = 0; i < this.samples * 2; i++) {
      const team = this.teams[i % this.teams.length] as ProbeTeam;
      const withRead = i % 2 === 1;
      try {
        const sample = await this.sample(team, withRead);
        (withRead ? paired : alone).push(sample);
      } catch {
        errors += 1;
      }
    }
    const result = (values: number[], failed: number): LoadResult => ({
      requestsPerSecond: Number.NaN,
      p50Ms: percentile(values, 50),
      p99Ms: percentile(values, 99),
      responses: values.length,
      non2xx: 0,
      errors: failed,
      warmupFailures: 0,
    });
    const command = result(
      alone.map((sample) => sample.commandMs),
      0,
    );
    const both = result(
      paired.map((sample) => sample.commandMs + (sample.readMs ?? 0)),
      errors,
    );
    const read = result(
      paired.map((sample) => sample.readMs ?? 0),
      errors,
    );
    this.runs.command.push(command);
    this.runs.both.push(both);
    this.runs.read.push(read);
    reportRun('read your writes: command alone', round, command);
    reportRun('read your writes: command then minVersion read', round, both);
  }

  rows(): ComparisonRow[] {
    const row = (name: string, runs: readonly LoadResult[]): ComparisonRow => ({
      ...summarise(name, runs),
      ratio: null,
      target: null,
      standalone: true,
    });
    return [
      row(
        `read your writes: LinkFantasyTeam/Unlink alone (1 at a time, ${this.samples}/run)`,
        this.runs.command,
      ),
      row('read your writes: the command, then GetFantasyTeam with minVersion (total)', this.runs.both),
      row('read your writes: the minVersion read alone (the added latency)', this.runs.read),
    ];
  }

  private async sample(team: ProbeTeam, withRead: boolean): Promise<Sample> {
    const started = performance.now();
    const answer = await this.post('/api/command', this.commandFor(team));
    const commandMs = performance.now() - started;
    if (answer.status !== 200) throw new Error(`command answered ${answer.status}`);
    team.linked = !team.linked;
    if (!withRead) return { commandMs };
    const { version } = answer.body as { version: number };
    const readStarted = performance.now();
    const read = await this.post('/api/readmodel', {
      query: { queryType: 'GetFantasyTeam', id: team.id, minVersion: version },
    });
    const readMs = performance.now() - readStarted;
    const seen = (read.body as { results?: { version: number }[] }).results?.[0]?.version ?? 0;
    if (read.status !== 200 || seen < version) throw new Error(`read answered ${read.status}`);
    return { commandMs, readMs };
  }

  private commandFor(team: ProbeTeam): object {
    if (team.linked) return { commandType: 'UnlinkFantasyTeam', command: { aggregateRootId: team.id } };
    const id = this.nextLinkId++;
    return {
      commandType: 'LinkFantasyTeam',
      command: { aggregateRootId: team.id, fantasyTeamExternalId: id, fantasyUserId: 2_000_000 + id },
    };
  }

  private async post(path: string, body: object): Promise<{ status: number; body: unknown }> {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method: 'POST',
      headers: { ...JSON_HEADERS, authorization: `Bearer ${this.token}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(GIVE_UP_MS),
    });
    return { status: response.status, body: await response.json() };
  }
}
