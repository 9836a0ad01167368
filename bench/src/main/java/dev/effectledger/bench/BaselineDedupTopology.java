package dev.effectledger.bench;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/**
 * The baseline: deduplication as the well-known Kafka Streams example does it: a persistent store
 * keyed by event id, forward the first, drop repeats, nothing else (no replies, no audit, no expiry
 * index, values passed through as bytes).
 */
final class BaselineDedupTopology {

  static final String STORE = "seen";

  private BaselineDedupTopology() {}

  static Topology build(String input, String output) {
    Topology topology = new Topology();
    topology.addSource(
        "source", Serdes.String().deserializer(), Serdes.ByteArray().deserializer(), input);
    topology.addProcessor("dedup", Dedup::new, "source");
    topology.addStateStore(
        Stores.keyValueStoreBuilder(
            Stores.persistentKeyValueStore(STORE), Serdes.String(), Serdes.Long()),
        "dedup");
    topology.addSink(
        "sink", output, Serdes.String().serializer(), Serdes.ByteArray().serializer(), "dedup");
    return topology;
  }

  private static final class Dedup implements Processor<String, byte[], String, byte[]> {
    private ProcessorContext<String, byte[]> context;
    private KeyValueStore<String, Long> seen;

    @Override
    public void init(ProcessorContext<String, byte[]> context) {
      this.context = context;
      this.seen = context.getStateStore(STORE);
    }

    @Override
    public void process(Record<String, byte[]> record) {
      if (isDuplicate(record.key())) {
        return;
      }
      rememberNewEvent(record.key(), record.timestamp());
      context.forward(record);
    }

    private boolean isDuplicate(String id) {
      return seen.get(id) != null;
    }

    private void rememberNewEvent(String id, long timestamp) {
      seen.put(id, timestamp);
    }
  }
}
