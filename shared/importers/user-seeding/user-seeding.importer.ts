import Joi from 'joi';

import type { NewUser } from '../../accounts/account.service';
import { grantRefusal, hasAnyRole } from '../../roles';
import { assignedRolesSchema, newPasswordSchema } from '../../user/account-schemas';
import { USER_COMMAND_ROLES, USER_TYPES } from '../../user/user.commands';
import { USER_MESSAGES } from '../../user/user.messages';
import { normalizeEmail } from '../../user/user-id';
import { boundedArray, emailAddress, isEmailAddress, text } from '../../validation';
import {
  batchRefused,
  failedAtAggregate,
  forEachLimited,
  type Importer,
  importOutcome as outcome,
  NO_AGGREGATE_ID,
  processingFailed,
  receivedField,
  receivedRows,
  roleRefusal,
  type RowError,
  stoppedBySubmitter,
} from '../importer';

export interface SeedUser {
  readonly email: string;
  readonly userName?: string;
  readonly userType: NewUser['userType'];
  readonly roles: NewUser['roles'];
  readonly firstName?: string | null;
  readonly lastName?: string | null;
  readonly password?: string;
  readonly emailVerified: boolean;
}

export interface UserSeedingData {
  readonly enabled: boolean;
  readonly skipIfUsersExist: boolean;
  readonly users: readonly SeedUser[];
}

/** The rowErrors code of a row asking for a role the submitter may not grant. */
export const ROLE_NOT_GRANTABLE = 'ROLE_NOT_GRANTABLE';

const seedUserSchema = Joi.object({
  email: emailAddress().required(),
  userName: text({ min: 1, max: 256, notBlank: true }).trim(),
  userType: Joi.string()
    .valid(...USER_TYPES)
    .required(),
  roles: assignedRolesSchema().required(),
  firstName: text({ max: 256 }).allow(null, ''),
  lastName: text({ max: 256 }).allow(null, ''),
  // A service account signs in by Basic, so it needs one; a Human may get one later.
  password: newPasswordSchema().when('userType', {
    is: 'ServiceAccount',
    then: Joi.required(),
  }),
  emailVerified: Joi.boolean().strict().default(false),
});

/** The spec's failure of a submitter without the role, at the first row's account. */
const refusedForRole = roleRefusal('CreateUser', USER_COMMAND_ROLES.CreateUser);

interface PlannedRow {
  readonly index: number;
  readonly user: SeedUser;
  readonly userId: string;
}

/** `UserSeeding` (spec 4.6): one CreateUser per user, checked as a whole batch before any runs. */
export const userSeedingImporter: Importer<UserSeedingData> = {
  importerType: 'UserSeeding',
  description: 'Creates user accounts (one CreateUser command per user).',
  requiredRoles: USER_COMMAND_ROLES.CreateUser,

  schema: (maxRows) =>
    Joi.object<UserSeedingData>({
      enabled: Joi.boolean().strict().default(true),
      skipIfUsersExist: Joi.boolean().strict().default(false),
      users: boundedArray(
        seedUserSchema,
        maxRows,
        `{{#label}} holds at most ${maxRows} rows per import`,
      ).required(),
    }),

  rowCount: (data) => data.users.length,

  async refuseWithoutRole(data, actor, { accounts }) {
    // As run() answers: a disabled importer or an empty batch runs no command to refuse.
    if (receivedField(data, 'enabled') === false) {
      return outcome({ status: 'Completed', message: 'Importer is disabled' });
    }
    const users = receivedRows(data, 'users');
    if (users?.length === 0)
      return outcome({ status: 'Completed', message: 'Import completed successfully' });
    // Unvalidated: the first row's account only when its e-mail is one, so no text of the body
    // reaches the record (the e-mail itself never does: only the id derived from it).
    const email = receivedField(users?.[0], 'email');
    const aggregateId = isEmailAddress(email) ? await accounts.userIds.idFor(email) : NO_AGGREGATE_ID;
    return refusedForRole(aggregateId, actor);
  },

  async run(data, context, { accounts }) {
    if (!data.enabled) return outcome({ status: 'Completed', message: 'Importer is disabled' });
    const ids = await Promise.all(data.users.map((user) => accounts.userIds.idFor(user.email)));
    const rows: PlannedRow[] = data.users.map((user, index) => ({ index, user, userId: ids[index] ?? '' }));
    const required = USER_COMMAND_ROLES.CreateUser;

    // 1. The whole batch first: duplicates inside it, the submitter's roles and the roles it grants.
    const firstIndexByEmail = new Map<string, number>();
    const duplicates: RowError[] = [];
    for (const { index, user } of rows) {
      const email = normalizeEmail(user.email);
      const first = firstIndexByEmail.get(email);
      if (first === undefined) firstIndexByEmail.set(email, index);
      else
        duplicates.push({
          index,
          code: 'DUPLICATE_IN_BATCH',
          message: `E-mail already used by row ${first}`,
        });
    }
    if (duplicates.length) {
      return batchRefused(
        `The batch repeats ${duplicates.length} e-mail(s); nothing was imported`,
        duplicates,
      );
    }
    if (rows.length && !hasAnyRole(context.actor.roles, required)) {
      return refusedForRole(rows[0]?.userId ?? NO_AGGREGATE_ID, context.actor);
    }
    // A role beyond the submitter's reach fails the whole batch before any account exists.
    const ungrantable = rows.flatMap(({ index, user, userId }) => {
      const message = grantRefusal(context.actor, user.roles);
      return message === undefined ? [] : [{ index, userId, message }];
    });
    const firstUngrantable = ungrantable[0];
    if (firstUngrantable) {
      return processingFailed(failedAtAggregate(firstUngrantable.userId, firstUngrantable.message), {
        rowErrors: ungrantable.map(({ index, message }) => ({ index, code: ROLE_NOT_GRANTABLE, message })),
      });
    }

    // 2. Accounts that exist already (not by this import): skipped, or the batch fails untouched.
    const existing = await Promise.all(rows.map((row) => accounts.existing(row.userId, context.importJobId)));
    const toCreate: PlannedRow[] = [];
    const rowErrors: RowError[] = [];
    // Created by an earlier attempt of this same job (it died mid-way): already done, counted as ours.
    const alreadyCreated = existing.filter((found) => found?.status === 'created').length;
    rows.forEach((row, i) => {
      const found = existing[i];
      if (found?.status === 'created') return;
      if (!found) toCreate.push(row);
      else
        rowErrors.push({
          index: row.index,
          code: 'USER_EXISTS',
          message: USER_MESSAGES.alreadyExists,
        });
    });
    const skipped = data.skipIfUsersExist ? rowErrors.length : 0;
    if (context.dryRun) {
      return outcome({
        status: rowErrors.length && !data.skipIfUsersExist ? 'Failed' : 'Completed',
        message: `Dry run: ${toCreate.length + alreadyCreated} user(s) would be created, ${skipped} skipped`,
        skipped,
        rowErrors,
        dryRun: { wouldCreate: toCreate.length + alreadyCreated, wouldSkip: skipped },
      });
    }
    const firstExisting = rows.find((_, i) => existing[i]?.status === 'exists');
    if (firstExisting && !data.skipIfUsersExist) {
      return processingFailed(failedAtAggregate(firstExisting.userId, USER_MESSAGES.alreadyExists), {
        rowErrors,
      });
    }

    // 3. Run the commands, a few at once, as the submitter.
    let created = alreadyCreated;
    let events = alreadyCreated;
    let failure: { userId: string; reason: string } | undefined;
    await forEachLimited(
      toCreate,
      context.concurrency,
      async (row) => {
        if (!(await context.submitter.mayContinue())) return;
        const result = await accounts.createUser(
          context.actor,
          row.user,
          { requestId: context.requestId, correlationId: context.importJobId },
          { knownAbsent: true },
        );
        if (result.status === 'created') {
          created += 1;
          events += result.eventCount;
        } else if (result.status === 'exists' && data.skipIfUsersExist) {
          rowErrors.push({
            index: row.index,
            code: 'USER_EXISTS',
            message: result.message,
          });
        } else {
          failure ??= { userId: result.userId, reason: result.message };
          rowErrors.push({
            index: row.index,
            code: 'COMMAND_FAILED',
            message: result.message,
          });
        }
        await context.onProgress(created + rowErrors.length, rows.length);
      },
      () => failure !== undefined || context.submitter.stopReason !== null,
    );

    const counts = {
      commandsExecuted: created,
      eventsGenerated: events,
      aggregatesProcessed: created,
      skipped: rowErrors.length - (failure ? 1 : 0),
      rowErrors,
    };
    if (failure) {
      return processingFailed(
        `${failedAtAggregate(failure.userId, failure.reason)} (${created} user(s) were created before it)`,
        counts,
      );
    }
    const { stopReason } = context.submitter;
    if (stopReason !== null) {
      return stoppedBySubmitter(stopReason, created + rowErrors.length, rows.length, counts);
    }
    return outcome({ status: 'Completed', message: 'Import completed successfully', ...counts });
  },
};
