import type { Request } from 'express';

/** The parsed body as an object, or an empty one when there is none (or it is a JSON scalar). */
export function jsonObjectBody(req: Request): Record<string, unknown> {
  return typeof req.body === 'object' && req.body !== null ? (req.body as Record<string, unknown>) : {};
}
