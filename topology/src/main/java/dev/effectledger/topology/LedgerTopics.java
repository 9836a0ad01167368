package dev.effectledger.topology;

import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;

/**
 * The ledger's topics with their serdes. The names come from {@link Topics} and {@link
 * dev.effectledger.schema.LedgerStore}, shared with the executors and clients; all topics are keyed
 * by the idempotency key (a string), values are in the Schema Registry wire format.
 */
public final class LedgerTopics {

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
    this.intents =
        new Topic<>(Topics.INTENTS, keys, new RegistryAvroSerde<>(registry, ToolIntent.class));
    this.outcomes =
        new Topic<>(Topics.OUTCOMES, keys, new RegistryAvroSerde<>(registry, Outcome.class));
    this.results =
        new Topic<>(Topics.RESULTS, keys, new RegistryAvroSerde<>(registry, ToolResult.class));
    this.audit =
        new Topic<>(Topics.AUDIT, keys, new RegistryAvroSerde<>(registry, AuditEvent.class));
    this.dispatchSerde = new RegistryAvroSerde<>(registry, Dispatch.class);
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
    return new Topic<>(Topics.dispatch(lane), Serdes.String(), dispatchSerde);
  }
}
