import type { Locator, Page } from 'playwright-core';

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

  /** Scrolls the operation's request and its answer (kept by `execute`) into the viewport. */
  async showAnswer(tag: string, operationId: string): Promise<void> {
    const block = this.page.locator(`#operations-${tag.replace(/ /g, '_')}-${operationId}`);
    await block.locator('.body-param').first().scrollIntoViewIfNeeded();
    await block.locator('.live-responses-table').first().scrollIntoViewIfNeeded();
  }
}
