/**
 * Waits until every promise has settled, then rejects with the first failure in their order, or
 * resolves. Calls that share buffers must all have ended before their caller reports, even when
 * one failed early.
 */
export async function settleAll(promises: readonly Promise<unknown>[]): Promise<void> {
  const outcomes = await Promise.allSettled(promises);
  const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
}
