/**
 * deploy/nginx.conf's `text` with `from` replaced by `to`, where `from` must occur exactly once: the
 * tests that run the shipped file with a few lines changed fail, naming the line, once it no longer holds it.
 */
export function replaceOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from);
  if (at === -1 || text.indexOf(from, at + 1) !== -1) {
    throw new Error(`deploy/nginx.conf must hold "${from}" exactly once: update this test with it`);
  }
  return text.slice(0, at) + to + text.slice(at + from.length);
}
