/**
 * Calls `onGone` once when the process that started this one has exited, seen as a change of
 * `process.ppid` (an orphan is adopted by init or a subreaper). A process manager or an IDE that
 * stops `npm start` signals only its own child; if that one dies without passing the signal on,
 * this is how the supervisor learns it must stop. The timer does not keep the process alive.
 */
export function watchParent(onGone: () => void, everyMs = 250): () => void {
  const parent = process.ppid;
  const timer = setInterval(() => {
    if (process.ppid === parent) return;
    clearInterval(timer);
    onGone();
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
