package dev.effectledger.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.Topics;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The topology runs in a JVM of its own and is killed with SIGKILL mid-run, restarted on the same
 * state directory, killed again and restarted on an empty one (restoring from the changelog). A
 * read_committed reader still sees one dispatch per key, and every intent got a reply; a restart on
 * its own state replays only the changelog's tail, not the whole store.
 *
 * <p>The processes run with {@link SmallMemtables} (64 KiB instead of 16 MiB). With transactional
 * state stores a restart after kill -9 replays what had not reached RocksDB's files, at most a few
 * memtables; this test's few thousand entries would otherwise all fit in the first memtable, and
 * the replay would be the whole changelog either way.
 */
@Tag("integration")
class LedgerCrashIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final int KEYS = 2_000;
  private static final int SENDS_PER_KEY = 2;
  private static final String APPLICATION_ID = "crash-it";

  @TempDir Path work;
  private final List<Process> processes = new ArrayList<>();

  @AfterEach
  void killLeftovers() {
    processes.forEach(Process::destroyForcibly);
  }

  @Test
  @Timeout(480)
  void shouldKeepOneDispatchPerKeyAcrossKillsAndRestoreFromChangelog() throws Exception {
    kafka.createTopics(Fixtures.topics(4));
    try (SchemaRegistryServer registry = SchemaRegistryServer.start()) {
      String bootstrap = kafka.bootstrapServers();
      Path firstState = Files.createDirectory(work.resolve("state-a"));
      Path emptyState = Files.createDirectory(work.resolve("state-b"));
      Map<String, AtomicInteger> sent = new ConcurrentHashMap<>();
      AtomicInteger sends = new AtomicInteger();

      try (EchoExecutor executor = new EchoExecutor(bootstrap, registry.url());
          var results = Fixtures.results(bootstrap, registry.url());
          var dispatches = Fixtures.dispatches(bootstrap, registry.url());
          KafkaProducer<String, ToolIntent> producer =
              Fixtures.intentProducer(bootstrap, registry.url())) {
        Process ledger = startLedger(bootstrap, registry.url(), firstState, "a1");
        CompletableFuture<Void> load =
            CompletableFuture.runAsync(() -> sendPaced(producer, sent, sends));

        await("a quarter of the load sent, a first dispatch out and the store on disk")
            .atMost(Duration.ofMinutes(2))
            .untilAsserted(
                () -> {
                  assertThat(sends.get())
                      .as("intents sent")
                      .isGreaterThanOrEqualTo(KEYS * SENDS_PER_KEY / 4);
                  assertThat(dispatches.total()).as("dispatches read").isPositive();
                  // a memtable flushed to an SST file: without one the restart replays the whole
                  // changelog, as it should (4 forks at once, 2026-12-07: 506 of 502 replayed)
                  assertThat(sstFiles(firstState)).as("RocksDB SST files").isPositive();
                });
        kill(ledger);
        long changelogRecords = LedgerProcesses.changelogEnd(bootstrap, APPLICATION_ID);
        ledger = startLedger(bootstrap, registry.url(), firstState, "a2");
        // Until 2026-11-29 (transactional state stores off) Kafka Streams wiped the store after
        // kill -9 under exactly_once_v2 and replayed its whole changelog. Now it restores from
        // where its store last got to disk, and replays the rest: how much depends on when
        // RocksDB last flushed, not on what was committed. On 2026-12-07 every record was
        // committed at the kill, and the restart replayed 410 and 414 of about 1,300 (two runs
        // alone) and 985 of 1,279 (a CI run), which failed the bound of half this test had. What
        // it asserts is what a wipe would break: the restore starts past the changelog's start.
        assertThat(LedgerProcesses.replayed(work.resolve("ledger-a2.log")))
            .as("records replayed by the restart on its own state, of %d", changelogRecords)
            .isLessThan(changelogRecords);

        await("three fifths of the load sent, before the second kill")
            .atMost(Duration.ofMinutes(2))
            .untilAsserted(
                () ->
                    assertThat(sends.get())
                        .as("intents sent")
                        .isGreaterThanOrEqualTo(KEYS * SENDS_PER_KEY * 3 / 5));
        kill(ledger);
        long beforeEmptyStart = LedgerProcesses.changelogEnd(bootstrap, APPLICATION_ID);
        ledger = startLedger(bootstrap, registry.url(), emptyState, "b1");
        // On an empty state directory the whole changelog is read: the RESTORE lines measure.
        assertThat(LedgerProcesses.replayed(work.resolve("ledger-b1.log")))
            .as("records restored on an empty state directory")
            .isGreaterThanOrEqualTo(beforeEmptyStart);

        load.get(3, TimeUnit.MINUTES);
        int intents = KEYS * SENDS_PER_KEY;
        await("a reply to each of the " + intents + " intents")
            .atMost(Duration.ofMinutes(4))
            .pollInterval(Duration.ofSeconds(1))
            .untilAsserted(
                () ->
                    assertThat(results.total()).as("replies read").isGreaterThanOrEqualTo(intents));
        await("exactly one reply per intent and one dispatch per key, for 3 s")
            .during(Duration.ofSeconds(3))
            .atMost(Duration.ofSeconds(10))
            .untilAsserted(
                () -> {
                  assertThat(results.total()).as("replies read").isEqualTo(intents);
                  assertThat(dispatches.total()).as("dispatches read").isEqualTo(KEYS);
                });
        kill(ledger);
        assertThat(dispatches.byKey).hasSize(KEYS);
        assertThat(dispatches.byKey.values()).allSatisfy(ds -> assertThat(ds).hasSize(1));
        assertThat(executor.effects.get()).isEqualTo(KEYS);
        sent.forEach(
            (key, count) ->
                assertThat(results.byKey.get(key)).as("replies for %s", key).hasSize(count.get()));
      }
    }
  }

  /**
   * Sends each key twice, the second time a few hundred sends later, at about 100 sends a second.
   */
  private static void sendPaced(
      KafkaProducer<String, ToolIntent> producer,
      Map<String, AtomicInteger> sent,
      AtomicInteger sends) {
    int lag = 300;
    for (int i = 0; i < KEYS + lag; i++) {
      if (i < KEYS) {
        send(producer, "c" + i, i, sent);
      }
      if (i >= lag) {
        send(producer, "c" + (i - lag), i - lag, sent);
      }
      sends.set(sent.values().stream().mapToInt(AtomicInteger::get).sum());
      if (i % 50 == 0) {
        producer.flush();
        try {
          Thread.sleep(250); // pacing the load, not synchronisation
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
    producer.flush();
  }

  private static void send(
      KafkaProducer<String, ToolIntent> producer,
      String key,
      int amount,
      Map<String, AtomicInteger> sent) {
    producer.send(new ProducerRecord<>(Topics.INTENTS, key, Fixtures.intent(key, amount)));
    sent.computeIfAbsent(key, k -> new AtomicInteger()).incrementAndGet();
  }

  /** SST files under {@code stateDir}; 0 when a file went away during the walk (asked again). */
  private static long sstFiles(Path stateDir) {
    try (Stream<Path> files = Files.walk(stateDir)) {
      return files.filter(f -> f.getFileName().toString().endsWith(".sst")).count();
    } catch (IOException | UncheckedIOException e) {
      return 0;
    }
  }

  private Process startLedger(String bootstrap, String registryUrl, Path stateDir, String name)
      throws IOException, InterruptedException {
    Process process =
        LedgerProcesses.start(
            work,
            bootstrap,
            registryUrl,
            stateDir,
            name,
            APPLICATION_ID,
            "default",
            SmallMemtables.SETTING);
    processes.add(process);
    return process;
  }

  private static void kill(Process process) throws InterruptedException {
    LedgerProcesses.kill(process);
  }
}
