import { randomUUID } from 'node:crypto';

import type { ServerProcess } from './processes';
import { postJson } from './service';

/** An import as POST /api/import and GetImportJobResult answer it (the fields the benches read). */
export interface ImportItem {
  readonly importJobId: string;
  readonly status: 'Pending' | 'Completed' | 'Failed';
  readonly processedSynchronously?: boolean;
  readonly commandsExecuted: number;
  readonly message: string;
  readonly progress?: { readonly done: number; readonly total: number };
  readonly executionDuration: string | null;
}

/**
 * Talks to POST /api/import and GetImportJobResult with one Authorization header (the Admin's
 * Basic, its verification cache warm); throws on any answer but 200.
 */
export class ImportClient {
  private readonly headers: Record<string, string>;

  constructor(
    protected readonly ingress: ServerProcess,
    authorization: string,
  ) {
    this.headers = { authorization };
  }

  async submit(
    importerType: 'PlayerSeeding' | 'UserSeeding',
    priority: 'High' | 'Normal',
    importData: unknown,
  ): Promise<ImportItem> {
    const answer = await postJson(
      `${this.ingress.baseUrl}/api/import`,
      { requestId: randomUUID(), importerType, priority, importData },
      this.headers,
    );
    if (answer.status !== 200)
      throw new Error(`POST /api/import answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    return answer.body as ImportItem;
  }

  async result(importJobId: string): Promise<ImportItem> {
    const answer = await postJson(
      `${this.ingress.baseUrl}/api/readmodel`,
      { query: { queryType: 'GetImportJobResult', importJobId } },
      this.headers,
    );
    const item = (answer.body as { results?: ImportItem[] } | null)?.results?.[0];
    if (answer.status !== 200 || !item) {
      throw new Error(`GetImportJobResult answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    }
    return item;
  }
}
