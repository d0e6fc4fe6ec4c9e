/**
 * package.json's `allowScripts` covers every dependency that has an install script (docs/operators.md,
 * "Install scripts"), so that `npm install` lists none as unreviewed and npm 12, which runs only the
 * allowed ones, installs what npm 11 does.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

describe('Install scripts', () => {
  it('When npm lists the install scripts no allowScripts entry covers, then there are none', () => {
    const listed = execFileSync('npm', ['install-scripts', 'ls'], { cwd: ROOT, encoding: 'utf8' });
    expect(listed).toContain('No packages with unreviewed install scripts');
  }, 60_000);

  it('When allowScripts is read, then the native add-ons may run theirs and the install telemetry may not', () => {
    const { allowScripts } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      allowScripts: Record<string, boolean>;
    };
    expect(allowScripts).toMatchObject({ 'msgpackr-extract': true, esbuild: true, '@scarf/scarf': false });
  });
});
