package dev.effectledger.schema;

/**
 * The ledger's state stores and the key format of its entries, in one place: the topology writes
 * them, the processor's HTTP query API and the topic provisioner read them.
 */
public final class LedgerStore {

  /** The RocksDB store of {@link LedgerEntry} values, keyed by {@link #key(String, String)}. */
  public static final String NAME = "ledger";

  /** The expiry and pending-timeout index of the ledger store. */
  public static final String DEADLINES = "ledger-deadlines";

  /**
   * The store of the tool policy a task applies (one record, changelogged), when the ledger reads
   * tool-policy live.
   */
  public static final String POLICY = "ledger-policy";

  private LedgerStore() {}

  /**
   * The store key of a tenant's idempotency key: keys are scoped by tenant, and a tenant never
   * contains '/'.
   */
  public static String key(String tenant, String idempotencyKey) {
    return tenant + '/' + idempotencyKey;
  }

  /**
   * The changelog topic Kafka Streams keeps for the ledger store of application {@code
   * applicationId}.
   */
  public static String changelog(String applicationId) {
    return applicationId + "-" + NAME + "-changelog";
  }
}
