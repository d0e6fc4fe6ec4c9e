import type { ImportResponseBody } from '../../ingress/import/import-response';
import type { ImportJobResultItem } from '../../shared/importers/import-results';
import type { ImportPriority } from '../../shared/importers/importer';
import { basicAuthorization, NetworkError, ServiceApi } from './service-api';

export { NetworkError } from './service-api';

/** `POST /api/import`'s answer (the spec's 2.7), plus what a dry run adds. */
export type ImportResponse = ImportResponseBody & {
  readonly dryRun?: { readonly wouldCreate: number; readonly wouldSkip: number };
};

/** The fields of a GetImportJobResult item the CLI reads. */
/** A job as GetImportJobResult answers it. */
export type ImportJobView = ImportJobResultItem;

/** The request body the CLI sends to `POST /api/import`. */
export interface ImportRequestBody {
  readonly requestId: string;
  readonly importerType: string;
  readonly priority?: ImportPriority;
  readonly importData: Record<string, unknown>;
  readonly dryRun?: boolean;
}

/** The service answered with a status other than 2xx. */
export class HttpError extends Error {
  override readonly name = 'HttpError';

  constructor(
    readonly endpoint: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${endpoint} answered HTTP ${status}${body ? `: ${body}` : ' with an empty body'}`);
  }

  /** Worth asking again while waiting: the service or its Redis is briefly away. */
  get transient(): boolean {
    return this.status === 502 || this.status === 503 || this.status === 504;
  }
}

/** The job was still Pending when the wait ran out. */
export class WaitTimeoutError extends Error {
  override readonly name = 'WaitTimeoutError';

  constructor(
    readonly importJobId: string,
    readonly timeoutMs: number,
    readonly last: ImportJobView | undefined,
  ) {
    super(`import ${importJobId} is still Pending after ${Math.round(timeoutMs / 1000)} s`);
  }
}

export interface ImportClientOptions {
  /** The service's base URL, e.g. http://127.0.0.1:8080. */
  readonly baseUrl: string;
  readonly email: string;
  readonly password: string;
  /** Node's global fetch unless a test passes its own. */
  readonly fetch?: typeof fetch;
  /** Per-request time limit. */
  readonly requestTimeoutMs?: number;
}

export interface WaitOptions {
  /** Time between two GetImportJobResult calls. */
  readonly intervalMs?: number;
  /** Give up (WaitTimeoutError) once the job has been Pending this long. */
  readonly timeoutMs: number;
  /** Keep polling through network errors and 502/503/504 for this long in a row. */
  readonly transientBudgetMs?: number;
  /** Called with every answer, Pending or final. */
  readonly onUpdate?: (view: ImportJobView) => void;
  readonly sleep?: (ms: number) => Promise<void>;
  readonly now?: () => number;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Talks to the service's import endpoints as one account, by Basic authentication. */
export class ImportClient {
  private readonly api: ServiceApi;
  private readonly authorization: string;

  constructor(options: ImportClientOptions) {
    this.api = new ServiceApi(options.baseUrl, {
      fetch: options.fetch,
      requestTimeoutMs: options.requestTimeoutMs ?? 5 * 60 * 1000,
    });
    this.authorization = basicAuthorization(options.email, options.password);
  }

  /** `POST /api/import`: submits (or, with the same requestId, re-reads) one import. */
  async submit(body: ImportRequestBody): Promise<ImportResponse> {
    return (await this.post('POST /api/import', '/api/import', body)) as ImportResponse;
  }

  /** GetImportJobResult through `POST /api/readmodel`: the job as its submitter sees it. */
  async jobResult(importJobId: string): Promise<ImportJobView> {
    const answer = (await this.post('GetImportJobResult', '/api/readmodel', {
      query: { queryType: 'GetImportJobResult', importJobId },
    })) as { results?: ImportJobView[] };
    const view = answer.results?.[0];
    if (!view) throw new HttpError('GetImportJobResult', 200, JSON.stringify(answer));
    return view;
  }

  /** Polls GetImportJobResult until the job is Completed or Failed, and returns it. */
  async waitUntilFinished(importJobId: string, options: WaitOptions): Promise<ImportJobView> {
    const sleep = options.sleep ?? defaultSleep;
    const now = options.now ?? Date.now;
    const intervalMs = options.intervalMs ?? 500;
    const transientBudgetMs = options.transientBudgetMs ?? 30_000;
    const deadline = now() + options.timeoutMs;
    let last: ImportJobView | undefined;
    let failingSince: number | undefined;
    for (;;) {
      try {
        last = await this.jobResult(importJobId);
        failingSince = undefined;
        options.onUpdate?.(last);
        if (last.status !== 'Pending') return last;
      } catch (error) {
        const transient = error instanceof NetworkError || (error instanceof HttpError && error.transient);
        if (!transient) throw error;
        failingSince ??= now();
        if (now() - failingSince >= transientBudgetMs) throw error;
      }
      if (now() >= deadline) throw new WaitTimeoutError(importJobId, options.timeoutMs, last);
      await sleep(intervalMs);
    }
  }

  /** A 2xx answer's JSON body; any other status, or a body that is not JSON, is an HttpError. */
  private async post(endpoint: string, path: string, body: unknown): Promise<unknown> {
    const answer = await this.api.post(path, body, this.authorization, endpoint);
    if (answer.status < 200 || answer.status > 299) throw new HttpError(endpoint, answer.status, answer.text);
    try {
      return JSON.parse(answer.text) as unknown;
    } catch {
      throw new HttpError(endpoint, answer.status, answer.text);
    }
  }
}

/** Why the import file cannot be used, in one line for the operator. */
export class ImportFileError extends Error {
  override readonly name = 'ImportFileError';
}

export interface RequestOverrides {
  readonly requestId: string;
  readonly priority?: ImportPriority;
  readonly dryRun?: boolean;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Turns an import file into a request body. The file holds either a whole request
 * (`{importerType, importData, priority?, dryRun?}`) or, when it has `users`, UserSeeding's
 * `importData` alone. The requestId is always the caller's: a requestId kept in a file would make
 * every later run answer the first run's job.
 */
export function buildImportRequest(file: unknown, overrides: RequestOverrides): ImportRequestBody {
  if (!isObject(file)) throw new ImportFileError('the file must hold a JSON object');
  let body: Omit<ImportRequestBody, 'requestId'>;
  if ('users' in file) {
    body = { importerType: 'UserSeeding', importData: file };
  } else if (typeof file.importerType === 'string' && isObject(file.importData)) {
    body = {
      importerType: file.importerType,
      importData: file.importData,
      ...(file.priority === undefined ? {} : { priority: file.priority as ImportPriority }),
      ...(file.dryRun === undefined ? {} : { dryRun: file.dryRun as boolean }),
    };
  } else {
    throw new ImportFileError(
      'the file must hold a request body {"importerType": ..., "importData": {...}} or UserSeeding data {"users": [...]}',
    );
  }
  return {
    ...body,
    requestId: overrides.requestId,
    ...(overrides.priority ? { priority: overrides.priority } : {}),
    ...(overrides.dryRun ? { dryRun: true } : {}),
  };
}
