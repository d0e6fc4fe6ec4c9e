/**
 * The webhook subscription commands of POST /api/command (issue 20): Admin only, the signing
 * secret answered once and never stored in the clear, target URLs refused early.
 */
import { randomUUID } from 'node:crypto';

import { WEBHOOK_TARGET_MESSAGES } from '../../../ingress/command/webhook-target';
import { SECRET_NOT_REPEATED } from '../../../shared/event-store/command-answer';
import { SECRETS_FIELD } from '../../../shared/webhook-subscription/webhook-secrets';
import { webhookSubscriptionDecider } from '../../../shared/webhook-subscription/webhook-subscription.decider';
import { WEBHOOK_MESSAGES } from '../../../shared/webhook-subscription/webhook-subscription.messages';
import { createTestApp, type TestApp } from '../../helpers/app-fixture';
import { redisContents } from '../../helpers/redis-state';
import { adminCommander } from '../../helpers/webhooks';

const SECRET = /^whsec_[A-Za-z0-9+/]{43}=$/;

describe('Webhook subscription commands', () => {
  let subject: TestApp;
  let admin: Awaited<ReturnType<typeof adminCommander>>;

  beforeAll(async () => {
    subject = await createTestApp({
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false',
      JWT_SECRET: 'webhook-commands-test-jwt-secret-of-32-chars',
    });
    admin = await adminCommander(subject.app, (user) => subject.createUser(user));
  });
  afterAll(() => subject.close());

  const create = (overrides: object = {}, extra: object = {}) =>
    admin.send(
      'CreateWebhookSubscription',
      {
        aggregateRootId: randomUUID(),
        url: 'https://hooks.example.com/fantasy',
        eventTypes: ['FantasyTeamLinkedEvent'],
        ...overrides,
      },
      extra,
    );

  /** Keys of the prefix whose value holds `secret`. */
  const keysHolding = async (secret: string) => {
    const contents = await redisContents(subject.redis, subject.config.redisKeyPrefix);
    return Object.entries(contents)
      .filter(([key, value]) => value.includes(secret) || key.includes(secret))
      .map(([key]) => key);
  };

  it('When an Admin creates a subscription, then the answer carries a whsec_ secret that is nowhere in Redis or the logs', async () => {
    const requestId = randomUUID();
    const res = await create({}, { requestId });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      success: true,
      eventCount: 1,
      commandType: 'CreateWebhookSubscription',
    });
    const secret = (res.body as { signingSecret: string }).signingSecret;
    expect(secret).toMatch(SECRET);
    // Nor its base64 body alone, in any key or value (events, record, idempotency store).
    expect(await keysHolding(secret.slice('whsec_'.length))).toEqual([]);
    expect(subject.logs.text).not.toContain(secret.slice('whsec_'.length));
  });

  it('When a create is sent again with its requestId, then it succeeds without the secret and says why', async () => {
    const requestId = randomUUID();
    const aggregateRootId = randomUUID();
    const first = await create({ aggregateRootId }, { requestId });
    expect(first.body).toHaveProperty('signingSecret');
    const again = await create({ aggregateRootId }, { requestId });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({
      requestId,
      success: true,
      eventCount: 1,
      commandType: 'CreateWebhookSubscription',
      version: 1,
      note: SECRET_NOT_REPEATED,
    });
  });

  it('When the remembered answer is lost, then a retry is answered from the aggregate, still without the secret', async () => {
    const requestId = randomUUID();
    const aggregateRootId = randomUUID();
    await create({ aggregateRootId }, { requestId });
    await subject.redis.del(subject.services.keys.commandResponse(admin.userId, requestId, aggregateRootId));
    const again = await create({ aggregateRootId }, { requestId });
    expect(again.status).toBe(200);
    expect(again.body).not.toHaveProperty('signingSecret');
    expect(again.body).toMatchObject({ note: SECRET_NOT_REPEATED });
  });

  it('When a Member or a UserManager sends a webhook command, then it is forbidden', async () => {
    for (const roles of [['Member'], ['UserManager']]) {
      const other = await adminCommander(subject.app, (user) => subject.createUser(user), roles);
      const res = await other.send('CreateWebhookSubscription', {
        aggregateRootId: randomUUID(),
        url: 'https://hooks.example.com/',
        eventTypes: ['*'],
      });
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ errorCode: 'COMMAND_FORBIDDEN' });
    }
  });

  it.each([
    ['http://hooks.example.com/', WEBHOOK_TARGET_MESSAGES.httpsOnly],
    ['http://127.0.0.1:8080/hook', WEBHOOK_TARGET_MESSAGES.httpsOnly],
    ['https://127.0.0.1/hook', WEBHOOK_TARGET_MESSAGES.privateTarget],
    ['https://10.1.2.3/hook', WEBHOOK_TARGET_MESSAGES.privateTarget],
    ['https://169.254.169.254/latest/meta-data', WEBHOOK_TARGET_MESSAGES.privateTarget],
    ['https://[::1]/hook', WEBHOOK_TARGET_MESSAGES.privateTarget],
    ['https://localhost/hook', WEBHOOK_TARGET_MESSAGES.privateTarget],
    ['https://user:pass@hooks.example.com/', WEBHOOK_TARGET_MESSAGES.credentials],
    // IPv6 forms that carry an IPv4 address (10.0.0.1 / 127.0.0.1), and site-local.
    ['https://[64:ff9b::a00:1]/hook', WEBHOOK_TARGET_MESSAGES.privateTarget],
    ['https://[64:ff9b:1::a00:1]/hook', WEBHOOK_TARGET_MESSAGES.privateTarget],
    ['https://[::a00:1]/hook', WEBHOOK_TARGET_MESSAGES.privateTarget],
    ['https://[::127.0.0.1]/hook', WEBHOOK_TARGET_MESSAGES.privateTarget],
    ['https://[2002:7f00:1::1]/hook', WEBHOOK_TARGET_MESSAGES.privateTarget],
    ['https://[fec0::1]/hook', WEBHOOK_TARGET_MESSAGES.privateTarget],
    // IPv4-translated (127.0.0.1) and Teredo.
    ['https://[::ffff:0:7f00:1]/hook', WEBHOOK_TARGET_MESSAGES.privateTarget],
    ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook', WEBHOOK_TARGET_MESSAGES.privateTarget],
  ])(
    'When private targets are not allowed and the url is %s, then the create is refused and writes nothing',
    async (url, message) => {
      const aggregateRootId = randomUUID();
      const res = await create({ aggregateRootId, url });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ errorCode: 'COMMAND_VALIDATION_ERROR', errorMessage: message });
      expect(await subject.services.store.streamLength('webhook-subscription', aggregateRootId)).toBe(0);
    },
  );

  it.each([
    ['http://hooks.example.com/'],
    ['https://10.1.2.3/hook'],
    ['https://[64:ff9b::a00:1]/hook'],
    ['https://[::a00:1]/hook'],
    ['https://[2002:a00:1::1]/hook'],
    ['https://[fec0::1]/hook'],
    ['https://[::ffff:0:a00:1]/hook'],
    ['https://[2001::a00:1]/hook'],
  ])(
    'When private targets are not allowed and an update names %s, then it is refused naming the setting that allows it, and the url stays',
    async (url) => {
      const aggregateRootId = randomUUID();
      expect((await create({ aggregateRootId })).status).toBe(200);
      const res = await admin.send('UpdateWebhookSubscription', { aggregateRootId, url });
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ errorCode: 'COMMAND_VALIDATION_ERROR' });
      expect((res.body as { errorMessage: string }).errorMessage).toContain(
        'allowed only with WEBHOOK_ALLOW_PRIVATE_TARGETS=true',
      );
      expect(await subject.services.store.streamLength('webhook-subscription', aggregateRootId)).toBe(1);
    },
  );

  it('When eventTypes names a type outside the catalogue, then the create is refused', async () => {
    const res = await create({ eventTypes: ['NoSuchEvent'] });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ errorCode: 'COMMAND_VALIDATION_ERROR' });
    expect((res.body as { errorMessage: string }).errorMessage).toContain('EventTypes[0] must be one of');
  });

  it('When the secret is rotated, then a new secret is answered, the record still holds no plaintext, and a stale expectedVersion conflicts', async () => {
    const aggregateRootId = randomUUID();
    const created = await create({ aggregateRootId });
    const first = (created.body as { signingSecret: string }).signingSecret;
    const rotated = await admin.send('RotateWebhookSecret', { aggregateRootId });
    expect(rotated.status).toBe(200);
    const second = (rotated.body as { signingSecret: string }).signingSecret;
    expect(second).toMatch(SECRET);
    expect(second).not.toBe(first);
    expect(await keysHolding(second.slice(6))).toEqual([]);
    expect(await keysHolding(first.slice(6))).toEqual([]);
    const stale = await admin.send('RotateWebhookSecret', { aggregateRootId }, { expectedVersion: 1 });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ errorCode: 'CONCURRENCY_CONFLICT' });
  });

  it('When the key its secret was sealed under has been replaced, then RotateWebhookSecret answers a new secret, which signs from then on', async () => {
    const aggregateRootId = randomUUID();
    expect((await create({ aggregateRootId })).status).toBe(200);
    // The same data, served by an ingress whose secrets are all new (leaked ones replaced).
    const rekeyed = await createTestApp({
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false',
      REDIS_KEY_PREFIX: subject.config.redisKeyPrefix,
      JWT_SECRET: 'the-jwt-secret-that-replaced-a-leaked-one',
      DATA_ENCRYPTION_KEY: 'a-data-encryption-key-replaced-after-a-leak',
    });
    try {
      const rekeyedAdmin = await adminCommander(rekeyed.app, (user) => rekeyed.createUser(user));
      const rotated = await rekeyedAdmin.send('RotateWebhookSecret', { aggregateRootId });
      expect(rotated.status).toBe(200);
      const fresh = (rotated.body as { signingSecret: string }).signingSecret;
      expect(fresh).toMatch(SECRET);
      const record = await rekeyed.services.store.loadRecordWith(
        webhookSubscriptionDecider.aggregateType,
        aggregateRootId,
        webhookSubscriptionDecider.initialState,
        SECRETS_FIELD,
      );
      expect(rekeyed.services.webhookSecrets.open(aggregateRootId, record.attachment!)).toEqual({
        current: fresh,
        previous: null,
      });
    } finally {
      await rekeyed.close();
    }
  });

  it('When a subscription is disabled, enabled and deleted, then each step succeeds once and a deleted one refuses more', async () => {
    const aggregateRootId = randomUUID();
    await create({ aggregateRootId });
    expect((await admin.send('DisableWebhookSubscription', { aggregateRootId })).status).toBe(200);
    const twice = await admin.send('DisableWebhookSubscription', { aggregateRootId });
    expect(twice.body).toMatchObject({ errorMessage: WEBHOOK_MESSAGES.alreadyDisabled });
    expect((await admin.send('EnableWebhookSubscription', { aggregateRootId })).status).toBe(200);
    expect((await admin.send('DeleteWebhookSubscription', { aggregateRootId })).status).toBe(200);
    const after = await admin.send('EnableWebhookSubscription', { aggregateRootId });
    expect(after.status).toBe(400);
    expect(after.body).toMatchObject({ errorMessage: WEBHOOK_MESSAGES.deleted });
  });

  it('When a replay names a time in the future or a missing subscription, then it is refused', async () => {
    const aggregateRootId = randomUUID();
    await create({ aggregateRootId });
    const future = await admin.send('ReplayWebhookEvents', {
      aggregateRootId,
      from: new Date(Date.now() + 3_600_000).toISOString(),
    });
    expect(future.body).toMatchObject({ errorMessage: WEBHOOK_MESSAGES.replayFromFuture });
    const missing = await admin.send('ReplayWebhookEvents', {
      aggregateRootId: randomUUID(),
      from: new Date().toISOString(),
    });
    expect(missing.body).toMatchObject({ errorMessage: WEBHOOK_MESSAGES.nonExistent });
  });
});
