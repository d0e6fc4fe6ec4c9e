/**
 * The pause of a consumer loop (the projector, the event stream's tail, the webhook dispatcher):
 * it sleeps until its next pass is due, and an announcement (or stop) ends the sleep at once. A
 * wake with no one asleep does nothing: a loop checks for work before it pauses, in the same
 * synchronous step, so nothing announced in between is missed.
 */
export class WakeablePause {
  private wakeUp: (() => void) | undefined;

  /** Resolves after `ms`, or as soon as wake() is called. */
  async for(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wakeUp = undefined;
  }

  /** Ends the pause in progress, if any. */
  wake(): void {
    this.wakeUp?.();
  }
}
