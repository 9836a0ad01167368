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
 * The deadline index has no changelog: a task that starts on entries restored without their index
 * (an empty state directory, a crash) rebuilds it from the entries under the current policy.
 */
class LedgerRebuildIndexTest {

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
                    SchemaRegistries.forUrl("mock://rebuild"), LedgerEntry.class))
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

  private static ToLongFunction<LedgerEntry> pendingTimeout(Duration timeout) {
    return e -> e.getLastDispatchedAt().plus(timeout).toEpochMilli();
  }

  private List<String> due(Ledger.Deadline kind, Instant now) {
    return ledger.takeDue(kind, now.toEpochMilli(), 100).stream()
        .map(Ledger.Due::storeKey)
        .toList();
  }

  private void putAll() {
    List.of(
            entry("a", LedgerState.SUCCEEDED, T0),
            entry("b", LedgerState.FAILED, T0.plusSeconds(60)),
            entry("p", LedgerState.PENDING, null),
            entry("u", LedgerState.UNKNOWN, null))
        .forEach(ledger::put);
  }

  @Test
  void shouldIndexEveryLiveEntryOfAStoreRestoredWithoutItsIndex() {
    putAll(); // as a restore from the changelog leaves them: entries, and no index

    assertThat(due(Ledger.Deadline.EXPIRY, T0.plus(Duration.ofDays(365)))).isEmpty();
    long indexed =
        ledger.rebuildIndex(pendingTimeout(Duration.ofMinutes(5)), window(Duration.ofHours(1)));

    assertThat(indexed).as("settled and pending, never an UNKNOWN one").isEqualTo(3);
    assertThat(due(Ledger.Deadline.PENDING, T0.plus(Duration.ofMinutes(4)))).isEmpty();
    assertThat(due(Ledger.Deadline.PENDING, T0.plus(Duration.ofMinutes(5))))
        .containsExactly("acme/p");
    assertThat(due(Ledger.Deadline.EXPIRY, T0.plus(Duration.ofMinutes(30)))).isEmpty();
    assertThat(due(Ledger.Deadline.EXPIRY, T0.plus(Duration.ofMinutes(61))))
        .containsExactly("acme/a", "acme/b");
  }

  @Test
  void shouldApplyTheCurrentWindowsWhenItRebuilds() {
    putAll();
    ledger.rebuildIndex(pendingTimeout(Duration.ofMinutes(5)), window(Duration.ofHours(24)));
    due(Ledger.Deadline.PENDING, T0.plus(Duration.ofMinutes(5)));

    // Restarted with a shorter window: the next start's rebuild purges on the new one.
    ledger.rebuildIndex(pendingTimeout(Duration.ofMinutes(5)), window(Duration.ofMinutes(1)));

    assertThat(due(Ledger.Deadline.EXPIRY, T0.plus(Duration.ofMinutes(2))))
        .containsExactly("acme/a", "acme/b");
    assertThat(due(Ledger.Deadline.EXPIRY, T0.plus(Duration.ofHours(25))))
        .as("the index entries of the old window stay, stale, until taken")
        .containsExactly("acme/a", "acme/b");
  }
}
