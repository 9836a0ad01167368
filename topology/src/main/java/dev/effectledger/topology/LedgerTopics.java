package dev.effectledger.topology;

import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;

/**
 * Names and serdes of every topic and store the ledger uses, in one place. All topics are keyed by
 * the idempotency key (a string); values on external topics are in the Schema Registry wire format.
 */
public final class LedgerTopics {

  public static final String INTENTS = "tool-intents";
  public static final String OUTCOMES = "tool-outcomes";
  public static final String RESULTS = "tool-results";
  public static final String AUDIT = "tool-audit";
  public static final String INTENTS_DLQ = "tool-intents.dlq";
  /** Where Kafka Streams' own handlers put outcomes it cannot deserialize. */
  public static final String OUTCOMES_DLQ = "tool-outcomes.dlq";
  public static final String DISPATCH_PREFIX = "tool-dispatch.";

  /** Header on replies naming their topic; the results sink routes by it. */
  public static final String REPLY_TOPIC_HEADER = "effectledger.reply.topic";

  public static final String LEDGER_STORE = "ledger";
  public static final String DEADLINE_STORE = "ledger-deadlines";

  private final Topic<String, ToolIntent> intents;
  private final Topic<String, Outcome> outcomes;
  private final Topic<String, ToolResult> results;
  private final Topic<String, AuditEvent> audit;
  private final Serde<Dispatch> dispatchSerde;

  public LedgerTopics(String schemaRegistryUrl) {
    this(SchemaRegistries.forUrl(schemaRegistryUrl));
  }

  public LedgerTopics(SchemaRegistry registry) {
    Serde<String> keys = Serdes.String();
    this.intents = new Topic<>(INTENTS, keys, new RegistryAvroSerde<>(registry, ToolIntent.class));
    this.outcomes = new Topic<>(OUTCOMES, keys, new RegistryAvroSerde<>(registry, Outcome.class));
    this.results = new Topic<>(RESULTS, keys, new RegistryAvroSerde<>(registry, ToolResult.class));
    this.audit = new Topic<>(AUDIT, keys, new RegistryAvroSerde<>(registry, AuditEvent.class));
    this.dispatchSerde = new RegistryAvroSerde<>(registry, Dispatch.class);
  }

  /** The dispatch topic of {@code lane}. */
  public static String dispatchTopic(String lane) {
    return DISPATCH_PREFIX + lane;
  }

  public Topic<String, ToolIntent> intents() {
    return intents;
  }

  public Topic<String, Outcome> outcomes() {
    return outcomes;
  }

  public Topic<String, ToolResult> results() {
    return results;
  }

  public Topic<String, AuditEvent> audit() {
    return audit;
  }

  public Topic<String, Dispatch> dispatch(String lane) {
    return new Topic<>(dispatchTopic(lane), Serdes.String(), dispatchSerde);
  }
}
