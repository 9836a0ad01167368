// Which final reply answers a call: one file, so that the rule is tested without a broker.

/** The header on a release's reply: the last intent the ledger had read when it released the key. */
export const INTENTS_THROUGH_HEADER = 'effectledger.intents.through';

/**
 * One call waiting for its final reply. It registers before its intent is published (so that no
 * reply slips past it) and so may see replies the ledger made before it read the intent; all answer
 * it (a duplicate read later gets the same answer), except a release's: the key is forgotten, and
 * an intent read after the release starts the key's next life. A release's reply names the last
 * intent the ledger had read ({@link INTENTS_THROUGH_HEADER}, -1 when it cannot tell); it answers
 * this call only if its intent's offset is at or below that. Until the broker acknowledged the
 * intent its offset is unknown, and a release that came first is kept and decided then. As the
 * Java client's PendingReply.
 */
export class PendingReply<R> {
  private offset = -1;
  private release: R | undefined;
  private releaseThrough = -1;

  constructor(private readonly done: (reply: R) => void) {}

  /** The broker took the call's intent at `offset` of its partition (-1: it did not say; no release answers the call). */
  published(offset: number): void {
    this.offset = offset;
    const release = this.release;
    this.release = undefined;
    if (release !== undefined && offset >= 0 && offset <= this.releaseThrough) this.done(release);
  }

  /**
   * A final reply for the call's key: `through` is undefined for one that answers every call
   * waiting, else the last intent the releasing ledger had read. True when it answered.
   */
  offer(reply: R, through: number | undefined): boolean {
    if (through === undefined || (this.offset >= 0 && this.offset <= through)) {
      this.done(reply);
      return true;
    }
    if (this.offset < 0 && through >= this.releaseThrough) {
      this.release = reply;
      this.releaseThrough = through;
    }
    return false;
  }
}

/** The release header of a reply's Kafka headers: undefined when absent, -1 when unreadable. */
export function throughOf(headers: Record<string, unknown> | undefined): number | undefined {
  const raw = headers?.[INTENTS_THROUGH_HEADER];
  if (raw === undefined || raw === null) return undefined;
  const value = Array.isArray(raw) ? raw[raw.length - 1] : raw;
  const n = Number(Buffer.isBuffer(value) ? value.toString('ascii') : String(value));
  return Number.isInteger(n) ? n : -1;
}
