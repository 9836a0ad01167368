package dev.effectledger.app.console;

import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * What the console reads from the processor's query API, as the processor's HTTP server answers it
 * (its {@code /v1/held}, {@code /v1/overview} and {@code /v1/keys} routes): the console is served
 * by that server and asks it directly, with the caller's credential passed on to other instances.
 */
public interface LedgerReads {

  /** The held entries on this instance and, unless {@code localOnly}, on every other it reaches. */
  ObjectNode held(String authorization, boolean localOnly);

  /** Per tool, summed over the instances this one reaches. */
  ObjectNode overview(String authorization, boolean localOnly);

  /**
   * The ledger entry of {@code tenant}'s {@code key} from the instance that owns it, null when
   * there is none.
   *
   * @throws IllegalStateException when the owner cannot be asked or the ledger is not running
   */
  ObjectNode entry(String tenant, String key, String authorization);
}
