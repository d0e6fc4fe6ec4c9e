/**
 * Preloaded (`--import`) into the ingress and the worker that `npm start` runs, over the IPC
 * channel it opens to each: when the supervisor dies, even by SIGKILL, the channel closes and the
 * child stops as on SIGTERM (its graceful drain), instead of serving on with nobody to stop it.
 */
if (process.channel) {
  process.once('disconnect', () => process.kill(process.pid, 'SIGTERM'));
  // The listener refs the channel; the child must still exit once its own work is done.
  process.channel.unref();
}

export {};
