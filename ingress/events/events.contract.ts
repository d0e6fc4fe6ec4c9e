import { beginningPosition, encodePosition } from '../../shared/event-stream/log-position';
import { catalogueEntry, PUBLIC_EVENT_TYPES } from '../../shared/public-events/event-catalogue';
import { ACCOUNT_READER_ROLES } from '../../shared/roles';
import { BASIC_OR_BEARER, unauthorizedAnswer } from '../auth/authentication.contract';
import type { OperationContract } from '../openapi/contract-kit';
import { EVENT_STREAM_ROLES } from './event-stream-access';
import { LAST_EVENT_ID_HEADER } from './event-stream-request';
import { STREAMS_FULL_RETRY_AFTER_SECONDS } from './event-streams';
import { EVENTS_PATH } from './events.routes';

const STREAM_DESCRIPTION = [
  "A `text/event-stream` (Server-Sent Events) of the service's events, from the global log: a catch-up",
  'from the start asked for, then every event as it is appended, without a gap between the two.',
  '',
  'Each event is `id: <position>`, `event: <event type>` and `data: {"type", "timestamp", "data"}`',
  "(`data` holding the event's fields plus `aggregateId` and `version`; user events never carry a",
  "password, hash or security stamp, and an erased account's personal fields are null). A user event's",
  "personal fields (those sealed at rest: a creation's email, userName, firstName and lastName, a",
  "disable's reason; `x-personal-fields`) reach only a reader that may read accounts (GetUser:",
  'UserManager or Admin); a ServiceAccount receives user events without them.',
  'The `id` is an',
  'opaque position (the last entry passed in each partition of the log): sent back as `Last-Event-ID`',
  '(EventSource does so by itself) or as `from`, the stream resumes just after that event, with no',
  'event missed and none repeated.',
  '',
  'Order: the events of one aggregate always arrive in their version order. Events of different',
  "aggregates arrive in append-time order as well as the log partitions' entry ids tell it (exact on",
  'one Redis server at millisecond grain; across cluster nodes, as close as their clocks), never',
  'as a promise.',
  '',
  "A stream lives with its account: within a second of the account's change (disabled, deleted, a role",
  'lost, its password changed or tokens revoked) it ends, and nothing appended after the change is sent',
  'on it.',
  '',
  'Caps per ingress: SSE_MAX_CONNECTIONS streams, of which the accounts of one role class (their highest',
  'role: Admin, UserManager, ServiceAccount, Member) hold at most SSE_MAX_CONNECTIONS_PER_ROLE_CLASS, and',
  'one account SSE_MAX_CONNECTIONS_PER_ACCOUNT.',
  '',
  'A comment (`: heartbeat`) every SSE_HEARTBEAT_MS (15 s), carrying the position as an `id:` when',
  'filtered-out events moved it. At shutdown the stream ends; reconnect with the last id. A client that',
  'reads nothing for SSE_SLOW_CLIENT_TIMEOUT_MS while the server has events to send is disconnected;',
  'it resumes the same way, losing nothing.',
].join('\n');

const TYPE_ALTERNATIVES = PUBLIC_EVENT_TYPES.join('|');

/** Which fields of which event types are personal, and who receives them (from the catalogue). */
function personalFields() {
  return {
    readers: ACCOUNT_READER_ROLES,
    fields: Object.fromEntries(
      PUBLIC_EVENT_TYPES.flatMap((type) => {
        const personal = catalogueEntry(type).personal ?? [];
        return personal.length > 0 ? [[type, personal]] : [];
      }),
    ),
  };
}

/** GET /api/events. */
export const EVENTS_CONTRACT: OperationContract = {
  path: EVENTS_PATH,
  method: 'get',
  operation: ({ answers }) => ({
    operationId: 'eventStream',
    summary: 'The event stream (Server-Sent Events), resumable from any event',
    description: STREAM_DESCRIPTION,
    tags: ['Events'],
    security: BASIC_OR_BEARER,
    'x-roles': EVENT_STREAM_ROLES,
    'x-personal-fields': personalFields(),
    parameters: [
      {
        name: 'types',
        in: 'query',
        required: false,
        description: 'Comma-separated event types to receive (default: every type).',
        schema: { type: 'string', pattern: `^(${TYPE_ALTERNATIVES})(,(${TYPE_ALTERNATIVES}))*$` },
        example: 'FantasyTeamLinkedEvent,FantasyTeamUnlinkedEvent',
      },
      {
        name: 'from',
        in: 'query',
        required: false,
        description:
          "Where the first connection starts: `beginning` (the whole log), `now` (the default: only events appended from now on) or an event's id (just after that event).",
        schema: { type: 'string' },
        example: encodePosition(beginningPosition()),
      },
      {
        name: LAST_EVENT_ID_HEADER,
        in: 'header',
        required: false,
        description: 'The id of the last event received: the stream resumes just after it. Wins over `from`.',
        schema: { type: 'string' },
      },
    ],
    responses: {
      '200': {
        ...answers.text(
          'The stream; it stays open until the client or the server closes it.',
          'text/event-stream',
        ),
        headers: {
          'X-Accel-Buffering': {
            schema: { const: 'no' },
            description: 'Tells nginx not to buffer the stream.',
          },
        },
      },
      '400': answers.problem(
        400,
        'An unknown event type in `types`, an unknown parameter, or a `from` or Last-Event-ID that is not a position this service wrote, or is older than the event log keeps (LOG_RETENTION: events after it were trimmed).',
      ),
      '401': unauthorizedAnswer(answers),
      '403': answers.problem(403, 'The account has neither the role Admin nor ServiceAccount.'),
      '429': answers.problem(429, 'Too many failed sign-ins; see Retry-After.'),
      ...answers.serverFailure(),
      '503': {
        ...answers.problem(
          503,
          `This instance has SSE_MAX_CONNECTIONS streams open, or the accounts of this account's role class SSE_MAX_CONNECTIONS_PER_ROLE_CLASS, or this account SSE_MAX_CONNECTIONS_PER_ACCOUNT (Retry-After: ${STREAMS_FULL_RETRY_AFTER_SECONDS}), or Redis is not reachable (Retry-After: 1).`,
        ),
        headers: { 'Retry-After': { schema: { type: 'integer' }, description: 'Seconds to wait.' } },
      },
    },
  }),
};
