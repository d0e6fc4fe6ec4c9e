import { mkdirSync } from 'node:fs';
import path from 'node:path';

import { buildApp } from '../ingress/app';
import { createIngressServices } from '../ingress/composition-root';
import { DOCS_PATH } from '../ingress/openapi/openapi.contract';
import { loadConfig } from '../shared/config';
import { listen } from '../shared/http/server';
import { createLogger } from '../shared/logger';
import { Metrics } from '../shared/metrics/metrics';
import { closeConnections, createRedisConnection, waitForRedis } from '../shared/redis/connections';
import { launchHeadlessChromium } from './lib/chromium';
import { startLocalRedis } from './lib/redis-server';

/**
 * `npm run docs:screenshot`: starts the ingress against a private redis-server, opens /api/docs in
 * headless Chromium (Debian's, at CHROMIUM_PATH or /usr/bin/chromium; `apt-get install chromium`),
 * expands POST /api/readmodel and saves docs/images/api-docs.png for docs/integrators.md. Not part of
 * `npm test` (the first-hour test drives Swagger UI there, with the same Chromium).
 */
const OUTPUT = path.resolve(__dirname, '..', 'docs', 'images', 'api-docs.png');

async function main(): Promise<void> {
  const redisServer = await startLocalRedis();
  const config = loadConfig(
    { REDIS_URL: redisServer.url, REDIS_KEY_PREFIX: 'docs-screenshot:', LOG_LEVEL: 'warn' },
    'ingress',
  );
  const logger = createLogger({ level: config.logLevel, processRole: 'docs-screenshot' });
  const redis = createRedisConnection(config.redis, 'request', logger);
  try {
    await waitForRedis(redis, logger);
    const services = await createIngressServices(config, redis, logger);
    const metrics = new Metrics(logger);
    const server = await listen(
      buildApp({ config, logger, redis, services, metrics }),
      0,
      '127.0.0.1',
      config.http,
    );
    try {
      const browser = await launchHeadlessChromium();
      try {
        const page = browser.context.pages()[0] ?? (await browser.context.newPage());
        // The page runs under helmet's Content-Security-Policy: say so if it blocks anything.
        page.on('console', (message) => {
          if (/Content Security Policy/i.test(message.text())) {
            process.stderr.write(`CSP violation: ${message.text()}\n`);
          }
        });
        await page.goto(`http://127.0.0.1:${server.port}${DOCS_PATH}`, { waitUntil: 'networkidle' });
        const readModel = page.locator('#operations-Read_model-readModel');
        await readModel.locator('.opblock-summary').first().click();
        await readModel.locator('.opblock-description-wrapper table').first().waitFor();
        await readModel.locator('.body-param__example').first().waitFor();
        // No focus ring on the clicked summary, and the page from its top.
        // A string: this project's TypeScript has no DOM types, and this runs in the page.
        await page.evaluate('document.activeElement?.blur(); window.scrollTo(0, 0)');
        mkdirSync(path.dirname(OUTPUT), { recursive: true });
        await page.screenshot({ path: OUTPUT, fullPage: false });
        process.stdout.write(`wrote ${path.relative(process.cwd(), OUTPUT)}\n`);
      } finally {
        await browser.close();
      }
    } finally {
      await server.close(1000);
      await services.close();
    }
  } finally {
    await closeConnections(redis);
    logger.close();
    await redisServer.stop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`docs:screenshot failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
