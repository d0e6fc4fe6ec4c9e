import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as OTLP/HTTP JSON carries it, with its resource's attributes beside it. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly attributes: Record<string, unknown>;
  readonly resource: Record<string, unknown>;
}

interface OtlpAttribute {
  readonly key: string;
  readonly value: Record<string, unknown>;
}

interface OtlpTraces {
  readonly resourceSpans?: readonly {
    readonly resource?: { readonly attributes?: readonly OtlpAttribute[] };
    readonly scopeSpans?: readonly {
      readonly spans?: readonly (Omit<ReceivedSpan, 'attributes' | 'resource'> & {
        readonly attributes?: readonly OtlpAttribute[];
      })[];
    }[];
  }[];
}

/** OTLP's typed values (`{ stringValue }`, `{ intValue }`...) as plain ones. */
function plain(attributes: readonly OtlpAttribute[] = []): Record<string, unknown> {
  const values = attributes.map(({ key, value }) => {
    const [kind, raw] = Object.entries(value)[0] ?? [];
    return [key, kind === 'intValue' ? Number(raw) : raw];
  });
  return Object.fromEntries(values) as Record<string, unknown>;
}

/**
 * A plain HTTP server that takes OTLP/HTTP on /v1/traces, as a collector would: JSON bodies are read
 * into spans, protobuf ones kept as they came (the SDK ships no decoder).
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly contentTypes: string[] = [];
  readonly protobufBodies: Buffer[] = [];
  private readonly server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const contentType = String(req.headers['content-type']);
      this.contentTypes.push(contentType);
      if (req.url === '/v1/traces' && contentType === 'application/json')
        this.receive(JSON.parse(body.toString()) as OtlpTraces);
      if (req.url === '/v1/traces' && contentType === 'application/x-protobuf')
        this.protobufBodies.push(body);
      res.writeHead(200, { 'content-type': contentType }).end();
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The spans received of one trace, in the order they came. */
  ofTrace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((span) => span.traceId === traceId);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private receive(traces: OtlpTraces): void {
    for (const resourceSpans of traces.resourceSpans ?? []) {
      const resource = plain(resourceSpans.resource?.attributes);
      for (const scope of resourceSpans.scopeSpans ?? []) {
        for (const span of scope.spans ?? []) {
          this.spans.push({ ...span, attributes: plain(span.attributes), resource });
        }
      }
    }
  }
}

/**
 * The standard variables that point a service process at `endpoint` (a receiver's `start()`): OTLP/HTTP
 * JSON, spans sent every 100 ms so a test sees them soon.
 */
export function tracingEnv(endpoint: string): Record<string, string> {
  return {
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '100',
  };
}
