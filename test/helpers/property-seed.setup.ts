import { usePropertySeed } from './property-seed';

// Every test file draws its properties from one printed seed (PROPERTY_SEED replays it).
usePropertySeed();
