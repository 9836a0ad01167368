package dev.effectledger.topology;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.schema.LedgerStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;

/** Starts {@link LedgerProcessMain} in a JVM of its own, for tests that stop or kill it. */
final class LedgerProcesses {

  private LedgerProcesses() {}

  /**
   * Starts a ledger process and waits until it is RUNNING; its output goes to {@code
   * ledger-<name>.log} in {@code work}. {@code policies}: {@code default} or {@code
   * short-deadlines}; {@code settings}: Streams settings as {@code key=value}.
   */
  static Process start(
      Path work,
      String bootstrap,
      String registryUrl,
      Path stateDir,
      String name,
      String applicationId,
      String policies,
      String... settings)
      throws IOException, InterruptedException {
    return start(
        System.getProperty("java.class.path"),
        work,
        bootstrap,
        registryUrl,
        stateDir,
        name,
        applicationId,
        policies,
        settings);
  }

  /**
   * As {@link #start(Path, String, String, Path, String, String, String, String...)}, on {@code
   * classpath}.
   */
  static Process start(
      String classpath,
      Path work,
      String bootstrap,
      String registryUrl,
      Path stateDir,
      String name,
      String applicationId,
      String policies,
      String... settings)
      throws IOException, InterruptedException {
    Path log = work.resolve("ledger-" + name + ".log");
    List<String> command =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m",
                "-cp",
                classpath,
                LedgerProcessMain.class.getName(),
                bootstrap,
                registryUrl,
                applicationId,
                stateDir.toString(),
                policies));
    command.addAll(List.of(settings));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    CountDownLatch running = new CountDownLatch(1);
    Thread pump =
        new Thread(
            () -> {
              try (BufferedReader out =
                      new BufferedReader(
                          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
                  var file = Files.newBufferedWriter(log)) {
                for (String line; (line = out.readLine()) != null; ) {
                  file.write(line);
                  file.newLine();
                  file.flush();
                  if (line.equals("RUNNING")) {
                    running.countDown();
                  }
                }
              } catch (IOException e) {
                // the process was killed; its output ends here
              }
            },
            "ledger-" + name + "-output");
    pump.setDaemon(true);
    pump.start();
    if (!running.await(120, TimeUnit.SECONDS)) {
      throw new AssertionError(
          "ledger process "
              + name
              + " did not reach RUNNING; see "
              + log
              + ":\n"
              + Files.readString(log));
    }
    return process;
  }

  /** SIGTERM: the process closes its Streams client and exits. */
  static void stop(Process process) throws InterruptedException {
    process.destroy();
    assertThat(process.waitFor(90, TimeUnit.SECONDS)).as("stopped within 90 s").isTrue();
  }

  static void kill(Process process) throws InterruptedException {
    process.destroyForcibly(); // SIGKILL on Unix: no shutdown hook, no commit
    assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
  }

  /** The ledger store's changelog: the sum of its partitions' end offsets. */
  static long changelogEnd(String bootstrap, String applicationId) throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      String topic = LedgerStore.changelog(applicationId);
      int partitions =
          admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
      Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
      for (int p = 0; p < partitions; p++) {
        latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
      }
      return admin.listOffsets(latest).all().get().values().stream()
          .mapToLong(ListOffsetsResultInfo::offset)
          .sum();
    }
  }

  /** The ledger store's changelog records a process restored, from its RESTORE lines. */
  static long replayed(Path log) throws IOException {
    try (var lines = Files.lines(log)) {
      return lines
          .filter(l -> l.startsWith("RESTORE " + LedgerStore.NAME + " "))
          .map(l -> l.split(" "))
          .mapToLong(f -> Long.parseLong(f[4]) - Long.parseLong(f[3]))
          .sum();
    }
  }
}
