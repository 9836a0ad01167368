package dev.effectledger.topology;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.effectledger.embedded.SchemaRegistryServer;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
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
 * The upgrade from the previous release's Kafka (4.3.1, the root pom's {@code
 * previous.kafka.version}, whose jars the build copies to {@code target/previous-kafka}) to this
 * build's, as an operator does it: the ledger runs on 4.3.1 and settles a set of keys, is stopped
 * cleanly (SIGTERM, as a rolling bounce stops an instance), and starts on this build's Kafka on the
 * same state directory and changelog. Every entry written before is kept (a second send of each key
 * is answered from the ledger, not dispatched again), new keys are dispatched, and the restart
 * takes up the 4.3.1 state directory (its {@code .checkpoint} files) instead of replaying the
 * changelog.
 *
 * <p>The Streams protocol needs no {@code upgrade.from} between 4.3 and 4.4 (Kafka's Streams
 * upgrade guide), so one bounce per instance is the whole upgrade; a group of instances is bounced
 * one at a time, each as this test bounces its one.
 */
@Tag("integration")
class RollingUpgradeIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final int KEYS = 400;
  private static final int PARTITIONS = 4;
  private static final String APPLICATION_ID = "upgrade-it";

  /** The root pom's {@code previous.kafka.version}, passed on by failsafe. */
  private static final String PREVIOUS = System.getProperty("previous.kafka.version", "4.3.1");

  @TempDir Path work;
  private final List<Process> processes = new ArrayList<>();

  @AfterEach
  void killLeftovers() {
    processes.forEach(Process::destroyForcibly);
  }

  @Test
  @Timeout(300)
  void shouldKeepEveryEntryWhenTheLedgerMovesFromThePreviousKafkaToThisOne() throws Exception {
    kafka.createTopics(Fixtures.topics(PARTITIONS));
    try (SchemaRegistryServer registry = SchemaRegistryServer.start()) {
      String bootstrap = kafka.bootstrapServers();
      Path state = Files.createDirectory(work.resolve("state"));
      try (EchoExecutor executor = new EchoExecutor(bootstrap, registry.url());
          var results = Fixtures.results(bootstrap, registry.url());
          var dispatches = Fixtures.dispatches(bootstrap, registry.url());
          KafkaProducer<String, ToolIntent> producer =
              Fixtures.intentProducer(bootstrap, registry.url())) {
        Process old = start(previousClasspath(), bootstrap, registry.url(), state, "previous");
        assertThat(Files.readString(work.resolve("ledger-previous.log")))
            .as("the first process runs on the previous Kafka")
            .contains("KAFKA " + PREVIOUS + "\n");
        send(producer, "k", KEYS);
        awaitReplies(results, KEYS);
        LedgerProcesses.stop(old);
        long changelog = LedgerProcesses.changelogEnd(bootstrap, APPLICATION_ID);
        assertThat(changelog).as("ledger changelog records written on " + PREVIOUS).isPositive();

        start(System.getProperty("java.class.path"), bootstrap, registry.url(), state, "current");
        Path log = work.resolve("ledger-current.log");
        assertThat(Files.readString(log))
            .as("the second process runs on this build's Kafka")
            .contains("KAFKA " + LedgerProcessMain.kafkaVersion() + "\n")
            .doesNotContain("KAFKA " + PREVIOUS + "\n");
        // The 4.3.1 process's clean close left .checkpoint files at each partition's last record;
        // what follows is that partition's transaction marker, one offset. A store taken up
        // replays those; one wiped or not found would replay the whole changelog.
        assertThat(LedgerProcesses.replayed(log))
            .as("changelog records replayed at the upgrade, of %d", changelog)
            .isLessThanOrEqualTo(PARTITIONS);

        send(producer, "k", KEYS); // each key again: answered from the ledger
        send(producer, "n", KEYS); // new keys: dispatched
        awaitReplies(results, 3 * KEYS);
        await("one dispatch per key and no more replies, for 3 s")
            .during(Duration.ofSeconds(3))
            .atMost(Duration.ofSeconds(30))
            .untilAsserted(
                () -> {
                  assertThat(results.total()).as("replies read").isEqualTo(3 * KEYS);
                  assertThat(dispatches.total()).as("dispatches read").isEqualTo(2 * KEYS);
                });
        assertThat(dispatches.byKey).hasSize(2 * KEYS);
        assertThat(dispatches.byKey.values()).allSatisfy(ds -> assertThat(ds).hasSize(1));
        assertThat(executor.effects.get()).isEqualTo(2 * KEYS);
        for (int i = 0; i < KEYS; i++) {
          assertThat(results.byKey.get("k" + i))
              .as("replies for k%d, sent before and after the upgrade", i)
              .extracting(ToolResult::getReplayed)
              .containsExactly(false, true);
        }
      }
    }
  }

  private static void send(KafkaProducer<String, ToolIntent> producer, String prefix, int keys) {
    for (int i = 0; i < keys; i++) {
      String key = prefix + i;
      producer.send(new ProducerRecord<>(Topics.INTENTS, key, Fixtures.intent(key, i)));
    }
    producer.flush();
  }

  private static void awaitReplies(
      dev.effectledger.testkit.TopicCollector<ToolResult> results, int replies) {
    await(replies + " replies")
        .atMost(Duration.ofMinutes(2))
        .pollInterval(Duration.ofMillis(200))
        .untilAsserted(() -> assertThat(results.total()).as("replies read").isEqualTo(replies));
  }

  /**
   * This JVM's classpath with its Kafka client and Streams jars swapped for the previous release's.
   * The ledger's own classes are this build's: what changed between the releases on our side (no
   * store or schema format since 4.3.1) is not what this test is about.
   */
  private static String previousClasspath() throws IOException {
    Path previous = Path.of(System.getProperty("basedir", "."), "target", "previous-kafka");
    List<String> jars;
    try (Stream<Path> files = Files.list(previous)) {
      jars = files.map(Path::toString).sorted().collect(Collectors.toList());
    }
    assertThat(jars)
        .as("jars copied by the build to %s", previous)
        .hasSize(2)
        .allMatch(j -> j.endsWith("-" + PREVIOUS + ".jar"));
    List<String> entries = new ArrayList<>(jars);
    String current = LedgerProcessMain.kafkaVersion();
    for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
      String name = Path.of(entry).getFileName().toString();
      if (!name.equals("kafka-clients-" + current + ".jar")
          && !name.equals("kafka-streams-" + current + ".jar")) {
        entries.add(entry);
      }
    }
    assertThat(entries).as("classpath entries").hasSize(jars.size() + classpathSize() - 2);
    return String.join(File.pathSeparator, entries);
  }

  private static int classpathSize() {
    return System.getProperty("java.class.path").split(File.pathSeparator).length;
  }

  private Process start(
      String classpath, String bootstrap, String registryUrl, Path state, String name)
      throws IOException, InterruptedException {
    Process process =
        LedgerProcesses.start(
            classpath, work, bootstrap, registryUrl, state, name, APPLICATION_ID, "default");
    processes.add(process);
    return process;
  }
}
