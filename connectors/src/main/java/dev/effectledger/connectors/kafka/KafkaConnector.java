package dev.effectledger.connectors.kafka;

import dev.effectledger.connectors.Capabilities;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRecord;
import dev.effectledger.connectors.EffectRequest;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * The effect is a record on a Kafka topic, keyed by the effect key, with the arguments as value.
 * The executor produces it in the same transaction as the outcome and the consumer offsets, so it
 * is published exactly once per committed dispatch with no help from the reader.
 */
public final class KafkaConnector implements Connector {

  private final String topic;

  public KafkaConnector(String topic) {
    this.topic = topic;
  }

  @Override
  public Capabilities capabilities() {
    return new Capabilities(false, true, false);
  }

  @Override
  public EffectOutcome execute(EffectRequest request) {
    EffectRecord record =
        new EffectRecord(
            topic,
            request.effectKey().getBytes(StandardCharsets.UTF_8),
            request.arguments().getBytes(StandardCharsets.UTF_8));
    return new EffectOutcome.Succeeded(
        "{\"topic\":\"" + topic + "\"}", topic + "/" + request.effectKey(), List.of(record));
  }
}
