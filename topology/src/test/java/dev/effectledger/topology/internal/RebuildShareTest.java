package dev.effectledger.topology.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.policy.AppliedPolicy;
import dev.effectledger.policy.ToolClass;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LivePolicies;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.api.MockProcessorContext;
import org.apache.kafka.streams.state.KeyValueStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The deadline index's rebuilds of all the tasks of one stream thread share one punctuation budget
 * per interval: a processor restarted on a large store answers intents while it rebuilds.
 */
class RebuildShareTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
  private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);

  /** Moves 10 ms each time it is read, and by whatever a test adds. */
  private final long[] now = {0};

  private final LongSupplier ticker = () -> now[0] += 10 * MS;
  private final List<KeyValueStore<?, ?>> stores = new ArrayList<>();

  @AfterEach
  void close() {
    stores.forEach(KeyValueStore::close);
  }

  /**
   * One task on a mock context, its store holding {@code entries} entries in flight (their timeouts
   * far off) to index.
   */
  private LedgerActions task(int partition, int entries) {
    MockProcessorContext<Object, Object> context =
        new MockProcessorContext<>(new Properties(), new TaskId(0, partition), null);
    context.setCurrentStreamTimeMs(T0.toEpochMilli());
    KeyValueStore<String, LedgerEntry> ledger = InMemoryLedgerStores.entries(context);
    KeyValueStore<Bytes, byte[]> deadlines = InMemoryLedgerStores.deadlines(context);
    stores.add(ledger);
    stores.add(deadlines);
    context.addStateStore(ledger);
    context.addStateStore(deadlines);
    ToolPolicies policies =
        ToolPolicies.of(ToolPolicy.builder("t", ToolClass.IRREVERSIBLE).lane("l").build());
    LedgerConfig config =
        LedgerConfig.of(policies, "mock://rebuild-share")
            .withLivePolicy(false)
            .withBatchSize(1)
            .withTicker(ticker); // 1 s punctuations, a 200 ms budget: the defaults
    LedgerActions actions =
        LedgerActions.open(context, config, new LivePolicies(AppliedPolicy.seed(policies, "")));
    for (int i = 0; i < entries; i++) {
      String key = "k" + partition + "-" + i;
      ledger.put("acme/" + key, LedgerRebuildIndexTest.entry(key, LedgerState.PENDING, null));
    }
    actions.ledger().startRebuild();
    return actions;
  }

  /** Entries the task's rebuild has looked at so far (it counts each one in flight). */
  private static long seen(LedgerActions task) {
    return Arrays.stream(task.ledger().counts().snapshot().getOrDefault("t", new long[0])).sum();
  }

  @Test
  void shouldGiveTheTasksOfOneThreadOneBudgetAnIntervalBetweenThem() {
    LedgerActions first = task(0, 1_000);
    LedgerActions second = task(1, 1_000);

    first.punctuations().onWallClock(T0.toEpochMilli());
    second.punctuations().onWallClock(T0.toEpochMilli());

    // One budget (200 ms: about 20 entries at 10 ms a read of the ticker) and what refilled while
    // the first task used it (a fifth of the time that passed: a few entries more). Until
    // 2026-11-29 each task took a budget of its own: 40 here, and eight tasks on a thread took
    // 1.6 s of every second.
    long secondSeen = seen(second);
    assertThat(seen(first) + secondSeen).isBetween(15L, 27L);

    now[0] += TimeUnit.SECONDS.toNanos(1); // the next interval
    second.punctuations().onWallClock(T0.toEpochMilli() + 1_000);
    assertThat(seen(second)).isGreaterThan(secondSeen);
  }
}
