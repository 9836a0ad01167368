package dev.effectledger.topology.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.topology.IndexCursors;
import dev.effectledger.topology.TaskCounts;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A task's processors each have a ledger over the same stores and remember the deadline index's
 * scan cursors together: what one moves, the others scan from, and a task that starts again on a
 * restored store reads them from the store again.
 */
class LedgerIndexCursorsTest {

  private final MockProcessorContext<Object, Object> context = new MockProcessorContext<>();
  private final List<KeyValueStore<?, ?>> opened = new ArrayList<>();
  private final TaskCounts counts = new TaskCounts();
  private final IndexCursors cursors = new IndexCursors();

  @AfterEach
  void close() {
    opened.forEach(KeyValueStore::close);
  }

  private KeyValueStore<String, LedgerEntry> entries() {
    KeyValueStore<String, LedgerEntry> store = InMemoryLedgerStores.entries(context);
    opened.add(store);
    return store;
  }

  private KeyValueStore<Bytes, byte[]> deadlines() {
    KeyValueStore<Bytes, byte[]> store = InMemoryLedgerStores.deadlines(context);
    opened.add(store);
    return store;
  }

  private static List<String> due(Ledger ledger, long now) {
    return ledger.takeDue(Ledger.Deadline.EXPIRY, now, 100).stream()
        .map(Ledger.Due::storeKey)
        .toList();
  }

  @Test
  void shouldScanFromWhereAnotherProcessorOfTheTaskMovedTheCursor() {
    KeyValueStore<String, LedgerEntry> entries = entries();
    KeyValueStore<Bytes, byte[]> deadlines = deadlines();
    Ledger intents = new Ledger(entries, deadlines, counts, cursors);
    Ledger outcomes = new Ledger(entries, deadlines, counts, cursors);
    intents.index(Ledger.Deadline.EXPIRY, 900, "acme/early");

    assertThat(due(intents, 1_000)).containsExactly("acme/early"); // the cursor moves past 1,000
    // An outcome that arrived late: its expiry lies behind the cursor the other ledger moved.
    outcomes.index(Ledger.Deadline.EXPIRY, 500, "acme/late");

    assertThat(due(intents, 1_000)).containsExactly("acme/late");
    assertThat(due(outcomes, 1_000)).isEmpty();
  }

  @Test
  void shouldReadTheCursorsFromTheStoreAgainWhenTheTaskStartsAgain() {
    KeyValueStore<String, LedgerEntry> entries = entries();
    Ledger before = new Ledger(entries, deadlines(), counts, cursors);
    before.index(Ledger.Deadline.EXPIRY, 900, "acme/a");
    assertThat(due(before, 1_000)).containsExactly("acme/a");

    // The task starts again on a store of its own (restored elsewhere, or emptied): an index entry
    // behind the cursor the task remembers, and no cursor in the store.
    KeyValueStore<Bytes, byte[]> restored = deadlines();
    restored.put(Ledger.indexKey(Ledger.Deadline.EXPIRY, 700, "acme/b"), new byte[] {1});
    Ledger after = new Ledger(entries, restored, counts, cursors);
    after.startRebuild();

    assertThat(due(after, 1_000)).containsExactly("acme/b");
  }
}
