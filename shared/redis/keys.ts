import { partitionOf, partitionTag } from './partitions';

/** The one hash tag of every sport projection key. */
const SPORT_TAG = '{sport}';

/**
 * Every Redis key the service uses is built here and nowhere else, so the key layout (and its
 * Redis Cluster hash tags) can be read in one place. `prefix` separates deployments and test runs.
 *
 * Keys of one aggregate share its partition's hash tag, so a script touching the stream, the
 * record, the lock and the log partition stays in one cluster slot.
 */
export function createKeys(prefix: string) {
  /** What every `kind` key of one aggregate type in one partition starts with (the id follows). */
  const aggregateKeysIn = (kind: string, aggregateType: string, partition: number) =>
    `${prefix}${partitionTag(partition)}:${kind}:${aggregateType}:`;
  const aggregate = (kind: string) => (aggregateType: string, aggregateId: string) =>
    `${aggregateKeysIn(kind, aggregateType, partitionOf(aggregateId))}${aggregateId.toLowerCase()}`;
  const projectionDocumentsIn = (projection: string, partition: number) =>
    `${prefix}${partitionTag(partition)}:projection:${projection}:`;

  return Object.freeze({
    prefix,
    /**
     * The aggregate's events, one entry per version (entry id `0-<version>`), never trimmed: each
     * envelope without what the key and the entry id say (ADR 0020, stored-envelope.ts).
     */
    aggregateStream: aggregate('stream'),
    /**
     * What the stream key of every aggregate of one type in one partition starts with, its
     * lower-cased id following (aggregateStream): how a script reads the events a log partition
     * names without each key being sent (read-projection-batch-1.lua).
     */
    aggregateStreamsIn: (aggregateType: string, partition: number) =>
      aggregateKeysIn('stream', aggregateType, partition),
    /** The aggregate's version, folded state and private attachments, written with each append. */
    aggregateRecord: aggregate('record'),
    /** Every record of one aggregate type, in every partition (for a snapshot rebuild). */
    aggregateRecordPattern: (aggregateType: string) => `${prefix}{p*}:record:${aggregateType}:*`,
    /** Every record of one aggregate type in one partition (a projection folded from the streams). */
    aggregateRecordPatternIn: (aggregateType: string, partition: number) =>
      `${prefix}${partitionTag(partition)}:record:${aggregateType}:*`,
    /** The aggregate id a record key (aggregateRecord) ends with. */
    aggregateIdOfRecord: (recordKey: string) => recordKey.slice(recordKey.lastIndexOf(':') + 1),
    /** Pub/sub channel where every append announces the changed aggregate's id. */
    aggregateChanges: (aggregateType: string) => `${prefix}changes:${aggregateType}`,
    /**
     * Pub/sub channel where the projector announces, after each batch it applied, the version each
     * aggregate of the batch has reached in that projection (projection-progress.ts).
     */
    projectionProgress: (projection: string) => `${prefix}projected:${projection}`,
    /** Serialises command handling on one aggregate across every process. */
    aggregateLock: aggregate('lock'),
    /**
     * Hash: `<caller user id>:<request id>` -> `first:last`, the versions of the events a caller's
     * request appended (24 h); see requestRecordField in event-store.ts.
     */
    aggregateRequests: aggregate('requests'),
    /** Sorted set: request id -> when it was appended (unix ms), to forget the old ones. */
    aggregateRequestTimes: aggregate('request-times'),
    /**
     * One partition of the global event log that projectors consume: a reference to each event
     * (its aggregate's type, id and version; before ADR 0020 a copy), trimmed by LOG_RETENTION.
     */
    logPartition: (partition: number) => `${prefix}${partitionTag(partition)}:log`,
    /**
     * The id of the newest entry ever trimmed from a log partition (LOG_RETENTION): a reader
     * resuming from an older position would miss entries, and is told so (ADR 0020).
     */
    logPartitionTrimmedThrough: (partition: number) =>
      `${prefix}${partitionTag(partition)}:log:trimmed-through`,
    /**
     * A partition's copy while it is rewritten (legacy events sealed, ADR 0014), in its slot: it
     * takes the partition's place when complete.
     */
    logPartitionRewrite: (partition: number) => `${prefix}${partitionTag(partition)}:log:rewrite`,
    /** A projection's document for one aggregate, in the aggregate's partition. */
    projectionDocument: (projection: string, aggregateId: string) =>
      `${projectionDocumentsIn(projection, partitionOf(aggregateId))}${aggregateId.toLowerCase()}`,
    /**
     * What the document key of every aggregate of one partition starts with, its lower-cased id
     * following (projectionDocument): how the projector's read script reads them beside the events.
     */
    projectionDocumentsIn,
    /** The last log entry id a projection applied from one partition. */
    projectionCheckpoint: (projection: string, partition: number) =>
      `${prefix}${partitionTag(partition)}:checkpoint:${projection}`,
    /** Every key of a partition-tagged projection, in every partition (for rebuilds). */
    projectionPatterns: (projection: string) => [
      `${prefix}{p*}:projection:${projection}:*`,
      `${prefix}{p*}:checkpoint:${projection}`,
      `${prefix}{p*}:checkpoint:${projection}:applied`,
    ],
    /**
     * How many log entries a projection has applied from one partition, kept beside its
     * checkpoint (same hash tag, so the batch script writes both): the lag metric's other half.
     */
    projectionAppliedCount: (checkpointKey: string) => `${checkpointKey}:applied`,
    /**
     * The sport projections keep every key under one tag, so a batch can update a player's
     * document and the indexes spanning all players in one script (one cluster slot).
     */
    sport: Object.freeze({
      checkpoint: (projection: string, partition: number) =>
        `${prefix}${SPORT_TAG}:checkpoint:${projection}:${partition}`,
      /** Every key of a sport projection (documents, indexes and checkpoints), for rebuilds. */
      patterns: (projection: string, ...others: string[]) => [
        `${prefix}${SPORT_TAG}:checkpoint:${projection}:*`,
        ...others.map((name) => `${prefix}${SPORT_TAG}:${name}`),
      ],
      /** A mapped player's document (the players projection), by platform id. */
      player: (platformId: string) => `${prefix}${SPORT_TAG}:player:${platformId.toLowerCase()}`,
      /** Sorted set of platform ids scored by feed id: the stable order of GetMappedPlayers. */
      playersByFeedId: () => `${prefix}${SPORT_TAG}:players:by-feed-id`,
      /** Hash: fantasy id -> platform id. */
      playersByFantasyId: () => `${prefix}${SPORT_TAG}:players:by-fantasy-id`,
      /** Set of the platform ids carrying one league player id. */
      playersByLeaguePlayerId: (leaguePlayerId: string) =>
        `${prefix}${SPORT_TAG}:players:by-league-player-id:${leaguePlayerId}`,
      /** Sorted set of the platform ids with stats for a season, scored by feed id. */
      playersInSeason: (season: string) => `${prefix}${SPORT_TAG}:players:in-season:${season}`,
      /**
       * Hash: platform id -> the player's GetMappedPlayers item (JSON) for one season, or for its
       * latest season (`latest`, see LATEST_SEASON): the listing sends these as they are, parsing nothing.
       */
      mappedPlayers: (season: string) => `${prefix}${SPORT_TAG}:players:mapped:${season}`,
      /**
       * Hash: platform id -> that player's stats for one season, as its ready-made
       * GetTeamRatingInputByTeamId entry (see projections/sport/rating-input.ts).
       */
      ratingInputs: (season: string) => `${prefix}${SPORT_TAG}:players:rating-inputs:${season}`,
      /** Hash: platform (participant) id -> feed id. */
      participantFeedIds: () => `${prefix}${SPORT_TAG}:participant-feed-ids`,
      /** A season's document (the seasons projection), by season aggregate id. */
      season: (seasonAggregateId: string) =>
        `${prefix}${SPORT_TAG}:season:${seasonAggregateId.toLowerCase()}`,
      /** Hash: season (`"2026"`) -> `{round, finalRound}` (JSON). */
      seasonRounds: () => `${prefix}${SPORT_TAG}:season-rounds`,
    }),
    /**
     * The users projection (ListUsers) keeps each account's document and index entries in the
     * account's partition, beside its checkpoint there (ADR 0032): a batch of one log partition
     * writes one slot, and the projection spreads over the 16 partitions as the aggregates do.
     */
    users: Object.freeze({
      /** The last log entry the users projection applied from one partition, in its slot. */
      checkpoint: (partition: number) => `${prefix}${partitionTag(partition)}:users:checkpoint`,
      /** Every key of the users projection, in every partition (for rebuilds). */
      patterns: () => [`${prefix}{p*}:users:*`],
      /**
       * What the document key of every account of one partition starts with, its lower-cased id
       * following (user): how the projector's read script reads them beside the events.
       */
      usersIn: (partition: number) => `${prefix}${partitionTag(partition)}:users:user:`,
      /** An account's ListUsers item (JSON), by user id, in the account's partition. */
      user: (userId: string) =>
        `${prefix}${partitionTag(partitionOf(userId))}:users:user:${userId.toLowerCase()}`,
      /**
       * Sorted set, every score 0, members `<e-mail>\0<user id>` in byte order: one partition's
       * accounts of one filter combination (`role`, `userType`, `enabled`/`disabled`, each `all`
       * when not filtered), ordered by e-mail, so a prefix is a ZRANGEBYLEX range in each partition
       * and ListUsers merges the 16 (see users-index.ts).
       */
      byEmail: (partition: number, role: string, userType: string, state: string) =>
        `${prefix}${partitionTag(partition)}:users:by-email:${role}:${userType}:${state}`,
      /**
       * Every key of the layout before ADR 0032 (everything under one `{users}` tag), which an
       * upgrade deletes; its every-account index (`legacyIndex`) tells a start that it is still there.
       */
      legacyPatterns: () => [`${prefix}{users}:*`],
      legacyIndex: () => `${prefix}{users}:users:by-email:all:all:all`,
    }),
    /**
     * Set: the ids of every webhook subscription ever created (deleted ones stay, skipped). The delivery
     * engine reads each one's record; a single key, in its own slot.
     */
    webhookSubscriptions: () => `${prefix}webhooks:subscriptions`,
    /**
     * Hash: where one subscription's delivery stands in one log partition (`checkpoint`, the
     * attempt and next-attempt time of the event it is retrying, the replay it last applied).
     * In the partition's slot: O(partitions) keys per subscription.
     */
    webhookCursor: (subscriptionId: string, partition: number) =>
      `${prefix}${partitionTag(partition)}:webhook-cursor:${subscriptionId.toLowerCase()}`,
    /** Stream: one subscription's delivery attempts (the delivery log), trimmed by age (MINID). */
    webhookDeliveries: (subscriptionId: string) =>
      `${prefix}webhook-deliveries:{${subscriptionId.toLowerCase()}}`,
    /**
     * Stream: the delivery log's attempts of one status (delivered, retrying, failed), so that a
     * read of one status pages it as the log is paged (ADR 0049). Same hash tag as the log.
     */
    webhookDeliveriesOfStatus: (subscriptionId: string, status: string) =>
      `${prefix}webhook-deliveries:{${subscriptionId.toLowerCase()}}:${status}`,
    /**
     * Sorted set of one member, `from`, scored by the id (ms x 1,024 + sequence) of the first log
     * entry also written to its status's stream (ZADD LT: replicas writing their first entries at
     * once keep the earliest). A status read is answered from that stream once no retained entry of
     * the log is older (ADR 0049).
     */
    webhookDeliveriesIndexedFrom: (subscriptionId: string) =>
      `${prefix}webhook-deliveries:{${subscriptionId.toLowerCase()}}:indexed-from`,
    /** Hash: `failingSince` (unix ms) while every attempt fails, for disabling the endpoint. */
    webhookHealth: (subscriptionId: string) => `${prefix}webhook-health:{${subscriptionId.toLowerCase()}}`,
    /** Live webhook dispatcher replicas (sorted set: replica id -> last heartbeat). */
    webhookDispatcherMembers: () => `${prefix}webhooks:members`,
    /** Live projector replicas (sorted set: replica id -> last heartbeat), for balancing leases. */
    projectorMembers: () => `${prefix}projectors:members`,
    /** Which projector replica works on a partition of a projection now. */
    projectionLease: (projection: string, partition: number) =>
      `${prefix}${partitionTag(partition)}:lease:${projection}`,
    /**
     * BullMQ's prefix for the import queue. The hash tag puts every key of the queue (and the
     * inline claim below) in one cluster slot, as BullMQ's scripts require.
     */
    importQueuePrefix: () => `${prefix}{imports}`,
    /** Held while a High import runs inline in an ingress, so two never do at once. */
    importInlineClaim: () => `${prefix}{imports}:inline-claim`,
    /** One import's status and result, queryable after BullMQ has dropped the job. */
    importResult: (importJobId: string) => `${prefix}import:{${importJobId.toLowerCase()}}:result`,
    /** Its progress while it runs, apart from the record so a late write cannot undo a final one. */
    importProgress: (importJobId: string) => `${prefix}import:{${importJobId.toLowerCase()}}:progress`,
    /**
     * Sorted set: the import job ids one account has Pending (-> when each was counted), bounding
     * them at MAX_PENDING_IMPORTS_PER_USER. One key, in its own slot, per submitter.
     */
    importsPendingBySubmitter: (submitterUserId: string) =>
      `${prefix}imports-pending:{${submitterUserId.toLowerCase()}}`,
    /**
     * Sorted set: the import job ids whose record names its submitter by e-mail (a role refusal's
     * message), scored by when the record expires (unix ms): what erasing the submitter scrubs. One
     * key, in its own slot, per submitter.
     */
    importsNamingSubmitter: (submitterUserId: string) =>
      `${prefix}imports-naming:{${submitterUserId.toLowerCase()}}`,
    /** The HS256 secret generated once when JWT_SECRET is unset, so every replica signs alike. */
    generatedJwtSecret: () => `${prefix}auth:jwt-secret`,
    /** The secret new user ids are derived under, generated once on the first start (ADR 0035). */
    userIdKey: () => `${prefix}users:id-key`,
    /**
     * A fingerprint of that key (an HMAC under it), written beside it: while it is there a missing
     * or different key is refused, never replaced (ADR 0046). Its own key, so on a cluster it lies
     * in another slot, most often on another master, than the key it vouches for.
     */
    userIdKeyFingerprint: () => `${prefix}users:id-key-fingerprint`,
    /**
     * The first answer to one caller's command request id, replayed to that caller for 24 h. In the
     * aggregate's partition, beside the events it answers for: a command waits on no other master
     * for it, and a failover keeps or loses it with those events (ADR 0030).
     */
    commandResponse: (callerUserId: string, requestId: string, aggregateId: string) =>
      `${prefix}${partitionTag(partitionOf(aggregateId))}:idempotency:command:${callerUserId.toLowerCase()}:${requestId.toLowerCase()}`,
    /**
     * String: what one caller's request id was first used for (its command type and aggregate), for
     * 24 h, in the caller's partition: a request id belongs to its caller whatever the aggregate, so
     * its reuse on another aggregate is refused (DUPLICATE_REQUEST_ID).
     */
    commandRequestUse: (callerUserId: string, requestId: string) =>
      `${prefix}${partitionTag(partitionOf(callerUserId))}:idempotency:use:${callerUserId.toLowerCase()}:${requestId.toLowerCase()}`,
    /**
     * Hash: request id -> aggregate id, of one caller's remembered command answers that name the
     * caller by e-mail (a refusal of an account command): what erasing the caller deletes. In the
     * caller's partition.
     */
    commandAnswersNamingCaller: (callerUserId: string) =>
      `${prefix}${partitionTag(partitionOf(callerUserId))}:idempotency:naming:${callerUserId.toLowerCase()}`,
    /**
     * Before ADR 0030: the untagged answer and naming index. Read only by erasure, for answers stored
     * before an upgrade (they expire within 24 h of it); remove in the release after.
     */
    legacyCommandAnswers: Object.freeze({
      response: (callerUserId: string, requestId: string) =>
        `${prefix}idempotency:command:${callerUserId.toLowerCase()}:${requestId.toLowerCase()}`,
      namingCaller: (callerUserId: string) => `${prefix}idempotency:naming:${callerUserId.toLowerCase()}`,
    }),
    /**
     * Sorted set: the team ids one owner holds (score +inf) or has reserved for a create in flight
     * (score: the reservation's deadline, unix ms), bounding the teams per owner (an Admin's are
     * indexed, unbounded) and naming the teams an erased owner's tombstone takes over. In the owner's
     * partition: a create waits on no master but its team's and its caller's.
     */
    ownerTeams: (ownerUserId: string) =>
      `${prefix}${partitionTag(partitionOf(ownerUserId))}:owner-teams:${ownerUserId.toLowerCase()}`,
    /**
     * String: set once every team was indexed under its owner in the owner's partition (ADR 0030):
     * an upgrade indexes them first. A new name, so an index built under the untagged keys is rebuilt.
     */
    ownerTeamsIndexed: () => `${prefix}owner-teams-indexed:partitioned`,
    /** Set: the ids of the enabled accounts holding Admin (the last-Admin guard; single key). */
    enabledAdmins: () => `${prefix}accounts:enabled-admins`,
    /** String: set once enabledAdmins was built from every account (an upgrade builds it first). */
    enabledAdminsBuilt: () => `${prefix}accounts:enabled-admins:built`,
    /** Failed sign-in counters (the throttle), by account and by client address. */
    authFailuresPrefix: () => `${prefix}auth:failures`,
    /**
     * Requests counted per account within the rate-limit window, in the account's partition: the
     * caller's own master, which its authentication reads already (ADR 0030).
     */
    accountRequests: (userId: string) =>
      `${prefix}${partitionTag(partitionOf(userId))}:rate:account:${userId.toLowerCase()}`,
    /** Bytes of import bodies counted per account within the minute (one single-key counter each). */
    importBytesPrefix: () => `${prefix}rate:import-bytes`,
  });
}

export type Keys = ReturnType<typeof createKeys>;
