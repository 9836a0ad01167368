package dev.effectledger.schema.serde;

import java.util.Map;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serializer;

/**
 * A serde that is its own serializer and deserializer, with nothing to configure or close: what the
 * Avro serdes here have in common.
 */
interface SelfSerde<T> extends Serde<T>, Serializer<T>, Deserializer<T> {

  @Override
  default Serializer<T> serializer() {
    return this;
  }

  @Override
  default Deserializer<T> deserializer() {
    return this;
  }

  @Override
  default void configure(Map<String, ?> configs, boolean isKey) {}

  @Override
  default void close() {}
}
