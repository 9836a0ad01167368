package dev.effectledger.topology.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.function.ToLongFunction;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A window changed while the ledger was down: on restart the ledger re-indexes the expiry of every
 * settled entry under the new window, once, so a shortened window purges on time.
 */
class LedgerReindexTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  private KeyValueStore<String, LedgerEntry> entries;
  private KeyValueStore<Bytes, byte[]> deadlines;
  private Ledger ledger;

  @BeforeEach
  void open() {
    MockProcessorContext<Object, Object> context = new MockProcessorContext<>();
    entries =
        Stores.keyValueStoreBuilder(
                Stores.inMemoryKeyValueStore(LedgerStore.NAME),
                Serdes.String(),
                new RegistryAvroSerde<>(
                    SchemaRegistries.forUrl("mock://reindex"), LedgerEntry.class))
            .withLoggingDisabled()
            .build();
    deadlines =
        Stores.keyValueStoreBuilder(
                Stores.inMemoryKeyValueStore(LedgerStore.DEADLINES),
                Serdes.Bytes(),
                Serdes.ByteArray())
            .withLoggingDisabled()
            .build();
    entries.init(context.getStateStoreContext(), entries);
    deadlines.init(context.getStateStoreContext(), deadlines);
    ledger = new Ledger(entries, deadlines);
  }

  @AfterEach
  void close() {
    entries.close();
    deadlines.close();
  }

  private static LedgerEntry entry(String key, LedgerState state, Instant completedAt) {
    return LedgerEntry.newBuilder()
        .setIdempotencyKey(key)
        .setTenant("acme")
        .setRunId("run")
        .setStepId(key)
        .setTool("t")
        .setEffectKey(key)
        .setArgumentsHash("sha256:x")
        .setArguments("{}")
        .setState(state)
        .setAttempts(1)
        .setFirstSeenAt(T0)
        .setLastDispatchedAt(T0)
        .setCompletedAt(completedAt)
        .build();
  }

  private static ToLongFunction<LedgerEntry> window(Duration window) {
    return e -> e.getCompletedAt().plus(window).toEpochMilli();
  }

  private List<String> expiredAt(Instant now) {
    return ledger.takeDue(Ledger.Deadline.EXPIRY, now.toEpochMilli(), 100).stream()
        .map(Ledger.Due::storeKey)
        .toList();
  }

  @Test
  void shouldReindexSettledEntriesOnceWhenTheWindowsChanged() {
    ledger.reindexExpiryIfChanged("window=24h", window(Duration.ofHours(24)));
    for (LedgerEntry e :
        List.of(
            entry("a", LedgerState.SUCCEEDED, T0),
            entry("b", LedgerState.FAILED, T0.plusSeconds(60)),
            entry("p", LedgerState.PENDING, null),
            entry("u", LedgerState.UNKNOWN, null))) {
      ledger.put(e);
      if (Ledger.isFinal(e)) {
        ledger.index(
            Ledger.Deadline.EXPIRY,
            window(Duration.ofHours(24)).applyAsLong(e),
            LedgerStore.key("acme", e.getIdempotencyKey()));
      }
    }

    ledger.reindexExpiryIfChanged("window=24h", window(Duration.ofMinutes(1)));
    assertThat(expiredAt(T0.plus(Duration.ofHours(1))))
        .as("same windows: nothing re-indexed")
        .isEmpty();

    ledger.reindexExpiryIfChanged("window=1m", window(Duration.ofMinutes(1)));
    assertThat(expiredAt(T0.plus(Duration.ofMinutes(2))))
        .as("settled entries under the new window, none pending or unknown")
        .containsExactly("acme/a", "acme/b");

    ledger.reindexExpiryIfChanged("window=1m", window(Duration.ofMinutes(1)));
    assertThat(expiredAt(T0.plus(Duration.ofHours(1))))
        .as("re-indexed once, not at every start")
        .isEmpty();
    assertThat(expiredAt(T0.plus(Duration.ofHours(25))))
        .as("the old index entries stay, stale, until taken")
        .containsExactly("acme/a", "acme/b");
  }
}
