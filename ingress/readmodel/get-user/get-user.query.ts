import type { AccountService } from '../../../shared/accounts/account.service';
import { ACCOUNT_READER_ROLES } from '../../../shared/roles';
import { toUserView } from '../../../shared/user/user-view';
import { usersProjection } from '../../../shared/user/users.projection';
import { emailAddress, guid } from '../../../shared/validation';
import { listingSchema, notFoundListing } from '../listing';
import { defineQuery, querySchema, type RegisteredQuery } from '../query-definition';
import { MIN_VERSION_SCHEMA, type ProjectionWaits } from '../read-your-writes';
import { USER_ITEM_SCHEMA } from '../user-item';

interface GetUserBody {
  /** Exactly one of the two (the schema's xor). */
  readonly query: { readonly id?: string; readonly email?: string; readonly minVersion?: number };
}

/**
 * `GetUser`: one account, by id or by e-mail (case-insensitively: the id derives from the
 * normalised e-mail and is looked up, ADR 0035), to a UserManager or an Admin. Read from the account's record, not a
 * projection, so it shows a change as soon as its command was answered; a missing or deleted
 * account answers the spec's 404 listing at once. `minVersion` therefore waits only for a version
 * no command has answered yet (one in flight), woken by the users projection (ADR 0019).
 */
export function getUserQuery(
  accounts: Pick<AccountService, 'findById' | 'userIds'>,
  waits: ProjectionWaits,
): RegisteredQuery {
  return defineQuery<GetUserBody>({
    queryType: 'GetUser',
    description:
      'One account by id or e-mail (exactly one): e-mail, names, type, roles, disabled, dates, version.',
    schemes: ['Basic', 'Bearer'],
    roles: ACCOUNT_READER_ROLES,
    schema: querySchema<GetUserBody>(
      'GetUser',
      { id: guid(), email: emailAddress(), minVersion: MIN_VERSION_SCHEMA },
      {},
      (query) => query.xor('id', 'email'),
    ),
    response: listingSchema('GetUserResult', USER_ITEM_SCHEMA),
    answersNotFoundListing: true,
    async handle({ principal, body }) {
      const { id, email, minVersion } = body.query;
      const userId = id ?? (await accounts.userIds.idFor(email ?? ''));
      const read = () => accounts.findById(userId);
      const account =
        minVersion === undefined
          ? await read()
          : await waits.until({
              projection: usersProjection.name,
              aggregateId: userId,
              minVersion,
              reader: principal,
              noun: 'user',
              read,
              versionOf: (found) => found?.version ?? Infinity,
            });
      if (!account) return notFoundListing();
      return { body: { results: [toUserView(account, account.version)], totalCount: 1 } };
    },
  });
}
