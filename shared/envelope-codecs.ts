import { personalDataCodec } from './accounts/personal-data';
import type { EnvelopeCodec } from './event-store/envelope-codec';

/**
 * Every aggregate type whose events carry sealed fields at rest (ADR 0014): the event store seals
 * and opens them (shared/core-services.ts, the snapshot rebuild), and the projector opens them before
 * any projection sees an event. A type without a codec is stored and read as it is.
 */
export const ALL_ENVELOPE_CODECS: readonly EnvelopeCodec[] = [personalDataCodec];
