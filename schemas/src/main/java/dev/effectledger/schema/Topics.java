package dev.effectledger.schema;

import java.util.List;

/**
 * The name of every topic Effect Ledger reads or writes, in one place: the ledger, the executors,
 * the reconciler, the client and the command all take them from here. Every topic is keyed by the
 * idempotency key (attempt journals by the effect key and attempt); values are in the Schema
 * Registry wire format.
 */
public final class Topics {

  /** Agents' tool intents ({@link ToolIntent}); co-partitioned with {@link #OUTCOMES}. */
  public static final String INTENTS = "tool-intents";

  /** Executors' and the reconciler's outcomes ({@link Outcome}). */
  public static final String OUTCOMES = "tool-outcomes";

  /**
   * The default reply topic ({@link ToolResult}); an intent may name {@code tool-results.<suffix>}
   * instead.
   */
  public static final String RESULTS = "tool-results";

  /**
   * The applied tool policy (compacted, one partition per tool-intents partition, each holding the
   * same document): written by {@code effectledger tools apply}, read by every processor, gateway
   * and client.
   */
  public static final String POLICY = "tool-policy";

  /** The ledger's audit events ({@link AuditEvent}). */
  public static final String AUDIT = "tool-audit";

  /**
   * What the reconciler and the console's "look up again" last found about each key held as
   * UNKNOWN: compacted, keyed by {@code tenant/key}, a JSON value ({@code status}, {@code since},
   * {@code by}), a tombstone once the key is no longer held. For operators; the ledger never reads
   * it.
   */
  public static final String FINDINGS = "tool-findings";

  /** Intents the ledger refused, as they came, with {@link DeadLetters} headers. */
  public static final String INTENTS_DLQ = "tool-intents.dlq";

  /** Outcomes Kafka Streams could not deserialize. */
  public static final String OUTCOMES_DLQ = "tool-outcomes.dlq";

  /** Dispatches an executor could not decode or answer, with {@link DeadLetters} headers. */
  public static final String DISPATCH_DLQ = "tool-dispatch.dlq";

  /** Dispatch topics are this prefix and the lane's name. */
  public static final String DISPATCH_PREFIX = "tool-dispatch.";

  /**
   * Attempt journals (compacted, one per lane whose downstream ignores keys) are this prefix and
   * the lane's name.
   */
  public static final String ATTEMPTS_PREFIX = "tool-attempts.";

  /** Header on replies naming their topic; the ledger's results sink routes by it. */
  public static final String REPLY_TOPIC_HEADER = "effectledger.reply.topic";

  /**
   * Header a producer may put on an intent (at most 128 bytes) to tell its replies apart: the
   * ledger copies it onto every reply that answers that intent itself (a replay, an in-flight
   * notice, a refusal), and onto none that answers the key for every waiter (a final result, a
   * timeout, a hold). The HTTP gateway sets it per request.
   */
  public static final String REQUEST_ID_HEADER = "effectledger.request.id";

  /**
   * Header on the reply that releases a key (FAILED with RETRIES_EXHAUSTED: no effect, the key
   * forgotten): the offset, on the key's {@value #INTENTS} partition, of the last intent the ledger
   * had read when it released the key, in decimal; a task that has read no intent since it started
   * names what it knows was read before (under {@code exactly_once_v2}, the offset that started the
   * key's life at least), {@code -1} when it cannot tell. The reply answers the calls whose intent
   * is at or below that offset; an intent above it was read after the release and starts the key's
   * next life, so its call must wait for that life's answer. A client that registers for a key's
   * replies before it publishes (as every client here does) would otherwise take a release that
   * came a moment after it published as its answer, and report "failed, nothing happened" for a
   * call whose effect then happens.
   */
  public static final String INTENTS_THROUGH_HEADER = "effectledger.intents.through";

  private Topics() {}

  /**
   * The topics every deployment has whatever its tools: intents, outcomes, replies, audit, the
   * three dead-letter topics and the applied policy. Dispatch topics and attempt journals come per
   * lane on top.
   */
  public static List<String> fixed() {
    return List.of(
        INTENTS,
        OUTCOMES,
        RESULTS,
        AUDIT,
        INTENTS_DLQ,
        OUTCOMES_DLQ,
        DISPATCH_DLQ,
        POLICY,
        FINDINGS);
  }

  /** The dispatch topic of {@code lane}. */
  public static String dispatch(String lane) {
    return DISPATCH_PREFIX + lane;
  }

  /** The attempt journal of {@code lane}. */
  public static String attempts(String lane) {
    return ATTEMPTS_PREFIX + lane;
  }

  /** The lane of a dispatch topic ({@code tool-dispatch.payments} gives {@code payments}). */
  public static String laneOfDispatch(String dispatchTopic) {
    return lane(dispatchTopic, DISPATCH_PREFIX);
  }

  /** The lane of an attempt journal ({@code tool-attempts.payments} gives {@code payments}). */
  public static String laneOfAttempts(String attemptsTopic) {
    return lane(attemptsTopic, ATTEMPTS_PREFIX);
  }

  private static String lane(String topic, String prefix) {
    if (!topic.startsWith(prefix) || topic.length() == prefix.length()) {
      throw new IllegalArgumentException(topic + " is not a " + prefix + "<lane> topic");
    }
    return topic.substring(prefix.length());
  }
}
