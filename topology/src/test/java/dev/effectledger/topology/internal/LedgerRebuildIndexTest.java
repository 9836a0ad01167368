package dev.effectledger.topology.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongConsumer;
import java.util.function.ToLongFunction;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The deadline index has no changelog: a task that starts on entries restored without their index
 * (an empty state directory, a crash) rebuilds it from the entries under the current policy, in
 * steps.
 */
class LedgerRebuildIndexTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
  private static final LongConsumer IGNORED = offset -> {};

  private KeyValueStore<String, LedgerEntry> entries;
  private KeyValueStore<Bytes, byte[]> deadlines;
  private Ledger ledger;

  @BeforeEach
  void open() {
    MockProcessorContext<Object, Object> context = new MockProcessorContext<>();
    entries = InMemoryLedgerStores.entries(context);
    deadlines = InMemoryLedgerStores.deadlines(context);
    ledger = new Ledger(entries, deadlines);
  }

  @AfterEach
  void close() {
    entries.close();
    deadlines.close();
  }

  /** An entry of tool {@code t} for tenant {@code acme}, dispatched at {@code T0}. */
  static LedgerEntry entry(String key, LedgerState state, Instant completedAt) {
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

  private void rebuild(ToLongFunction<LedgerEntry> expiryOf) {
    ledger.startRebuild();
    while (ledger.rebuilding()) {
      ledger.rebuildStep(pendingTimeout(Duration.ofMinutes(5)), expiryOf, IGNORED, 100);
    }
  }

  @Test
  void shouldRebuildTheHeldIndexAndCountEachEntryOnceWhileItChangesDuringTheRebuild() {
    for (String key : List.of("a", "b", "c", "d")) {
      ledger.put(entry(key, LedgerState.PENDING, null));
    }
    ledger.put(entry("e", LedgerState.UNKNOWN, null));
    // A held index entry left from before whose key is no longer held: the rebuild drops it.
    deadlines.put(dev.effectledger.topology.HeldKeys.indexKey("acme/gone"), new byte[] {1});

    ledger.startRebuild();
    ledger.rebuildStep(
        pendingTimeout(Duration.ofMinutes(5)), window(Duration.ofHours(1)), IGNORED, 2);
    // Between steps: "a" (counted already) and "d" (not reached yet) are held.
    for (String key : List.of("a", "d")) {
      ledger.put(entry(key, LedgerState.UNKNOWN, null));
      ledger.moved("acme/" + key, "t", LedgerState.PENDING, LedgerState.UNKNOWN);
    }
    while (ledger.rebuilding()) {
      ledger.rebuildStep(
          pendingTimeout(Duration.ofMinutes(5)), window(Duration.ofHours(1)), IGNORED, 2);
    }

    assertThat(ledger.counts().rebuilding()).isFalse();
    assertThat(ledger.counts().snapshot().get("t")).containsExactly(2, 3);
    assertThat(dev.effectledger.topology.HeldKeys.list(deadlines, 10))
        .containsExactly("acme/a", "acme/d", "acme/e");
  }

  /**
   * The rebuild passes on the intent offset each restored entry was started by (its incarnation),
   * so a task that has read no intent since it started can still say which ones were read before.
   */
  @Test
  void shouldReportTheIncarnationOfEveryEntryItIndexes() {
    LedgerEntry first = entry("a", LedgerState.SUCCEEDED, T0);
    first.setIncarnation(17L);
    LedgerEntry held = entry("b", LedgerState.UNKNOWN, null);
    held.setIncarnation(42L);
    LedgerEntry older = entry("c", LedgerState.PENDING, null); // from a ledger before incarnations
    List.of(first, held, older).forEach(ledger::put);

    List<Long> started = new ArrayList<>();
    ledger.startRebuild();
    while (ledger.rebuilding()) {
      ledger.rebuildStep(
          pendingTimeout(Duration.ofMinutes(5)), window(Duration.ofHours(1)), started::add, 2);
    }

    assertThat(started).containsExactly(17L, 42L);
  }

  @Test
  void shouldIndexEntriesWrittenDuringARebuildAndEveryEntryBeforeIt() {
    putAll();
    ledger.startRebuild();
    ledger.rebuildStep(
        pendingTimeout(Duration.ofMinutes(5)), window(Duration.ofHours(1)), IGNORED, 2);
    // Processing goes on between steps: a new key, indexed by the ledger as it settles.
    ledger.put(entry("0-new", LedgerState.SUCCEEDED, T0));
    ledger.index(
        Ledger.Deadline.EXPIRY,
        window(Duration.ofHours(1)).applyAsLong(entry("0-new", LedgerState.SUCCEEDED, T0)),
        "acme/0-new");
    while (ledger.rebuilding()) {
      ledger.rebuildStep(
          pendingTimeout(Duration.ofMinutes(5)), window(Duration.ofHours(1)), IGNORED, 2);
    }

    assertThat(due(Ledger.Deadline.EXPIRY, T0.plus(Duration.ofMinutes(61))))
        .containsExactly("acme/0-new", "acme/a", "acme/b");
    assertThat(due(Ledger.Deadline.PENDING, T0.plus(Duration.ofMinutes(5))))
        .containsExactly("acme/p");
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
    ledger.startRebuild();
    List<Integer> steps = new ArrayList<>();
    while (ledger.rebuilding()) {
      steps.add(
          ledger.rebuildStep(
              pendingTimeout(Duration.ofMinutes(5)), window(Duration.ofHours(1)), IGNORED, 3));
    }

    assertThat(steps).as("in steps of at most 3 entries").containsExactly(3, 1);
    assertThat(ledger.rebuildStep(pendingTimeout(Duration.ZERO), window(Duration.ZERO), IGNORED, 3))
        .as("done: nothing more")
        .isZero();
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
    rebuild(window(Duration.ofHours(24)));
    due(Ledger.Deadline.PENDING, T0.plus(Duration.ofMinutes(5)));

    // Restarted with a shorter window: the next start's rebuild purges on the new one.
    rebuild(window(Duration.ofMinutes(1)));

    assertThat(due(Ledger.Deadline.EXPIRY, T0.plus(Duration.ofMinutes(2))))
        .containsExactly("acme/a", "acme/b");
    assertThat(due(Ledger.Deadline.EXPIRY, T0.plus(Duration.ofHours(25))))
        .as("the index entries of the old window stay, stale, until taken")
        .containsExactly("acme/a", "acme/b");
  }
}
