import type { CommandIdempotency } from '../event-store/command-idempotency';
import type { EventMetadata } from '../event-store/envelope';
import type { EventStore } from '../event-store/event-store';
import type { TeamTombstone } from '../fantasy-team/team-tombstone';
import type { ImportRecordErasure } from '../importers/import-record-erasure';
import { isDeletedUser, userDecider } from '../user/user.decider';
import { CREDENTIAL_FIELD } from './account';
import type { ErasureFinisher } from './account.service';
import { PERSONAL_DATA_KEY_FIELD } from './personal-data';

/** What erasing an account takes beyond its UserDeletedEvent (ADR 0014). */
export interface AccountErasure {
  /** Record fields dropped with the event, atomically: the credential and the personal-data key. */
  readonly removedAttachments: readonly string[];
  /**
   * Runs after the account's UserDeletedEvent is written (and again on a retry of the same request):
   * passes its teams to the tombstone. Must be idempotent.
   */
  afterDelete(userId: string, tombstoneId: string, metadata: EventMetadata): Promise<void>;
  /** afterDelete with the tombstone the account's record holds, if the account is erased. */
  finishErasure(userId: string, metadata: EventMetadata): Promise<void>;
}

/**
 * The record fields DeleteUser drops with its UserDeletedEvent, in the same script: the password
 * hash, and the personal-data key, which erases every sealed field of the account's events.
 */
export const ERASED_ATTACHMENTS: readonly string[] = Object.freeze([
  CREDENTIAL_FIELD,
  PERSONAL_DATA_KEY_FIELD,
]);

/**
 * Erasure beyond the UserDeletedEvent (ADR 0014). The event's append drops the key and the
 * credential (`removedAttachments`) and overwrites the record's state with the tombstone; then
 * `afterDelete` passes the account's teams to its tombstone id and removes the account's e-mail from
 * what names it outside its aggregate: import records of imports it submitted, and remembered
 * command answers refusing it. Every step finds its work by the user id alone (the e-mail is gone by
 * then) and is idempotent, so it runs again after a crash: on a retry of the DeleteUser request, and
 * before the e-mail is registered again (`finishErasure`, from AccountService.createUser).
 */
export class AccountErasureService implements AccountErasure, ErasureFinisher {
  readonly removedAttachments = ERASED_ATTACHMENTS;

  constructor(
    private readonly store: EventStore,
    private readonly teams: TeamTombstone,
    private readonly importRecords: ImportRecordErasure,
    private readonly answers: CommandIdempotency,
  ) {}

  async afterDelete(userId: string, tombstoneId: string, metadata: EventMetadata): Promise<void> {
    await this.teams.passTeams(userId, tombstoneId, metadata);
    await this.importRecords.forgetSubmitter(userId);
    await this.answers.forgetCaller(userId);
  }

  /** When the account is erased, runs `afterDelete` again for its tombstone; else does nothing. */
  async finishErasure(userId: string, metadata: EventMetadata): Promise<void> {
    const { state } = await this.store.loadRecord(
      userDecider.aggregateType,
      userId,
      userDecider.initialState,
    );
    if (isDeletedUser(state)) await this.afterDelete(userId, state.tombstoneId, metadata);
  }
}
