import type { Importer } from './importer';
import { playerSeedingImporter } from './player-seeding/player-seeding.importer';
import { userSeedingImporter } from './user-seeding/user-seeding.importer';

/** Every importer, by importerType. Adding one is a folder plus a line here. */
export const IMPORTERS: ReadonlyMap<string, Importer> = new Map(
  [userSeedingImporter as Importer, playerSeedingImporter as Importer].map((importer) => [
    importer.importerType,
    importer,
  ]),
);
