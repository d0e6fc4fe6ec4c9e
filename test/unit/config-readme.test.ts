import { readFileSync } from 'node:fs';
import path from 'node:path';

import {
  configurationRows,
  configurationTable,
  readmeConfigurationRows,
  withConfigurationTable,
} from '../../shared/config/readme-table';
import { SETTINGS } from '../../shared/config/settings';

const README = readFileSync(path.resolve(__dirname, '../../README.md'), 'utf8');

describe("README's configuration table", () => {
  it('When the README is read, then its configuration table is the one the settings rows generate', () => {
    // On a difference, run `npm run docs:config` (the rows in shared/config/settings.ts are the source).
    expect(readmeConfigurationRows(README)).toEqual(configurationRows());
  });

  it('When a row of the README table is edited by hand, then the comparison finds it', () => {
    const edited = README.replace('| `PORT` ', '| `PORT_NUMBER` ');
    expect(readmeConfigurationRows(edited)).not.toEqual(configurationRows());
    const dropped = withConfigurationTable(README, configurationTable(SETTINGS.slice(1)));
    expect(readmeConfigurationRows(dropped)).not.toEqual(configurationRows());
  });

  it('When the settings are listed, then every variable has one row of its own or is named in the row it refers to', () => {
    const rows = configurationRows();
    const variableCells = rows.map(([variables]) => variables ?? '');
    for (const setting of SETTINGS) {
      const { doc } = setting;
      if ('describedIn' in doc) {
        const row = rows.find(([variables]) => variables === `\`${doc.describedIn}\``);
        expect(row?.join(' ')).toContain(`\`${setting.env}\``);
      } else {
        expect(variableCells.filter((cell) => cell.split(', ').includes(`\`${setting.env}\``))).toHaveLength(
          1,
        );
      }
    }
    expect(new Set(SETTINGS.map((setting) => setting.env)).size).toBe(SETTINGS.length);
  });

  it("When a row gives a default, then it is the row's own field, not a default inside its joi schema", () => {
    // The Config type reads a value as optional unless the row's `default` is set.
    for (const setting of SETTINGS) {
      expect([setting.env, setting.joi.describe().flags]).not.toEqual([
        setting.env,
        expect.objectContaining({ default: expect.anything() as unknown }),
      ]);
    }
  });
});
