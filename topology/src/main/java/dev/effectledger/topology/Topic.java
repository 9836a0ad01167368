package dev.effectledger.topology;

import org.apache.kafka.common.serialization.Serde;

/**
 * A topic's name with the serdes of its keys and values.
 *
 * @param <K> key type
 * @param <V> value type
 */
public record Topic<K, V>(String name, Serde<K> keySerde, Serde<V> valueSerde) {}
