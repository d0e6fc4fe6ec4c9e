import type { Locator, Page } from 'playwright-core';

/** The little of a DOM element `pictureOfAnswer` touches (this project's TypeScript has no DOM types). */
interface Hideable {
  readonly style: { display: string };
  readonly tagName: string;
  readonly previousElementSibling: Hideable | null;
}

/**
 * Drives Swagger UI (/api/docs) as a person does: Authorize with a scheme, then "Try it out" on an
 * operation with one of its named request examples, "Execute", and read the answer it shows.
 */
export class SwaggerUi {
  constructor(private readonly page: Page) {}

  async open(baseUrl: string): Promise<void> {
    await this.page.goto(`${baseUrl}/api/docs`, { waitUntil: 'networkidle' });
    await this.page.locator('button.authorize').first().waitFor();
  }

  /** "Authorize", fill one scheme's form, apply it, close the dialog. */
  private async authorize(scheme: string, fill: (form: Locator) => Promise<void>): Promise<void> {
    await this.page.locator('.scheme-container button.authorize').click();
    const form = this.page.locator('.modal-ux .auth-container').filter({ hasText: scheme });
    await fill(form);
    await form.locator('button.authorize').click();
    await form.locator('button.btn-done').click();
    await this.page.locator('.modal-ux').waitFor({ state: 'detached' });
  }

  async authorizeBasic(email: string, password: string): Promise<void> {
    await this.authorize('basicAuth', async (form) => {
      await form.locator('input[name=username]').fill(email);
      await form.locator('input[name=password]').fill(password);
    });
  }

  async authorizeBearer(token: string): Promise<void> {
    await this.authorize('bearerAuth', (form) => form.locator('input[type=text]').fill(token));
  }

  /** Forgets every scheme's credentials ("Logout" in each form of the dialog). */
  async logout(): Promise<void> {
    await this.page.locator('.scheme-container button.authorize').click();
    const logouts = this.page.locator('.modal-ux button', { hasText: 'Logout' });
    while ((await logouts.count()) > 0) await logouts.first().click();
    await this.page.locator('.modal-ux button.close-modal').click();
    await this.page.locator('.modal-ux').waitFor({ state: 'detached' });
  }

  /**
   * Runs one operation (by its tag and operationId, as Swagger UI names its block) with the named
   * request example, optionally edited, and answers the status and body Swagger UI shows.
   */
  async execute(
    tag: string,
    operationId: string,
    example: string,
    edit?: (body: string) => string,
    options: { readonly keep?: boolean } = {},
  ): Promise<{ status: number; body: string }> {
    const block = this.page.locator(`#operations-${tag.replace(/ /g, '_')}-${operationId}`);
    if (!(await block.locator('.opblock-body').isVisible()))
      await block.locator('.opblock-summary').first().click();
    const tryOut = block.locator('button.try-out__btn');
    if ((await tryOut.textContent())?.includes('Try it out')) await tryOut.click();
    await block.locator('.examples-select select').first().selectOption(example);
    if (edit) {
      const editor = block.locator('textarea.body-param__text');
      await editor.fill(edit(await editor.inputValue()));
    }
    await block.locator('button.execute').click();
    const live = block.locator('.live-responses-table .response').first();
    await live.waitFor();
    const status = Number((await live.locator('.response-col_status').textContent())?.trim());
    const body =
      (await live
        .locator('.response-col_description pre.microlight, .response-col_description pre')
        .first()
        .textContent()) ?? '';
    // The next execute of this block must not read this answer (unless it stays for a picture).
    if (!options.keep) await block.locator('button.btn-clear').click();
    return { status, body };
  }

  /**
   * A picture of the operation's request example and the answer `execute` kept, from the request
   * body down to the answer's body, without the curl and the request URL Swagger UI shows between
   * them (the curl spells out the credentials).
   */
  async pictureOfAnswer(tag: string, operationId: string, file: string): Promise<void> {
    const block = this.page.locator(`#operations-${tag.replace(/ /g, '_')}-${operationId}`);
    for (const selector of ['.curl-command', '.request-url']) {
      // Hidden with its label, not removed (Swagger UI's React owns the node); element.style is
      // CSSOM, which the CSP allows.
      await block
        .locator(selector)
        .first()
        .evaluate((element: Hideable) => {
          element.style.display = 'none';
          const label = element.previousElementSibling;
          if (label?.tagName === 'H4') label.style.display = 'none';
        });
    }
    const top = await block.locator('.opblock-section-request-body').first().boundingBox();
    const bottom = await block
      .locator('.live-responses-table .response-col_description pre')
      .first()
      .boundingBox();
    const frame = await block.boundingBox();
    if (!top || !bottom || !frame) throw new Error('Swagger UI shows no answer to picture');
    // Boxes are in the viewport's coordinates; a full-page clip is in the page's.
    const scrolled = Number(await this.page.evaluate('window.scrollY'));
    await this.page.screenshot({
      path: file,
      fullPage: true,
      clip: {
        x: frame.x,
        y: top.y + scrolled,
        width: frame.width,
        height: bottom.y + bottom.height - top.y + 8,
      },
    });
  }
}
