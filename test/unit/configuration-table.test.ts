import { readFileSync } from 'node:fs';
import path from 'node:path';

import {
  configurationRows,
  configurationTable,
  documentedConfigurationRows,
  withConfigurationTable,
} from '../../scripts/lib/configuration-table';
import { SETTINGS } from '../../shared/config/settings';

const OPERATORS_GUIDE = readFileSync(path.resolve(__dirname, '../../docs/operators.md'), 'utf8');

describe("The operators guide's configuration table", () => {
  it('When the operators guide is read, then its configuration table is the one the settings rows generate', () => {
    // On a difference, run `npm run docs:config` (the rows in shared/config/settings.ts are the source).
    expect(documentedConfigurationRows(OPERATORS_GUIDE)).toEqual(configurationRows());
  });

  it('When a row of the table is edited by hand, then the comparison finds it', () => {
    const edited = OPERATORS_GUIDE.replace('| `PORT` ', '| `PORT_NUMBER` ');
    expect(edited).not.toBe(OPERATORS_GUIDE);
    expect(documentedConfigurationRows(edited)).not.toEqual(configurationRows());
    const dropped = withConfigurationTable(OPERATORS_GUIDE, configurationTable(SETTINGS.slice(1)));
    expect(documentedConfigurationRows(dropped)).not.toEqual(configurationRows());
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
