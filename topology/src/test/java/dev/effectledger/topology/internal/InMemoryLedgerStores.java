package dev.effectledger.topology.internal;

import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

/** The ledger's two stores in memory, without changelogs, opened on a mock context for a test. */
final class InMemoryLedgerStores {

  private InMemoryLedgerStores() {}

  static KeyValueStore<String, LedgerEntry> entries(MockProcessorContext<Object, Object> context) {
    KeyValueStore<String, LedgerEntry> store =
        Stores.keyValueStoreBuilder(
                Stores.inMemoryKeyValueStore(LedgerStore.NAME),
                Serdes.String(),
                new RegistryAvroSerde<>(
                    SchemaRegistries.forUrl("mock://in-memory-ledger"), LedgerEntry.class))
            .withLoggingDisabled()
            .build();
    store.init(context.getStateStoreContext(), store);
    return store;
  }

  static KeyValueStore<Bytes, byte[]> deadlines(MockProcessorContext<Object, Object> context) {
    KeyValueStore<Bytes, byte[]> store =
        Stores.keyValueStoreBuilder(
                Stores.inMemoryKeyValueStore(LedgerStore.DEADLINES),
                Serdes.Bytes(),
                Serdes.ByteArray())
            .withLoggingDisabled()
            .build();
    store.init(context.getStateStoreContext(), store);
    return store;
  }
}
