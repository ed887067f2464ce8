// A bounded memory of deliveries already forwarded, so a repeated delivery costs no second signal.
// Losing it (a restart) is harmless: the workflow ignores a delivery it has already acted on.

export class RecentDeliveries {
  private readonly seen = new Map<string, true>();

  constructor(private readonly capacity = 10_000) {}

  private static keyOf(workflowId: string, requestId: string): string {
    return `${workflowId}\n${requestId}`;
  }

  has(workflowId: string, requestId: string): boolean {
    return this.seen.has(RecentDeliveries.keyOf(workflowId, requestId));
  }

  add(workflowId: string, requestId: string): void {
    const key = RecentDeliveries.keyOf(workflowId, requestId);
    // Re-inserting moves the key to the newest end of the Map's insertion order.
    this.seen.delete(key);
    this.seen.set(key, true);
    if (this.seen.size > this.capacity) {
      const oldest = this.seen.keys().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
  }

  get size(): number {
    return this.seen.size;
  }
}
