package dev.effectledger.bench.chaos;

import dev.effectledger.bench.Processes.Node;
import dev.effectledger.bench.chaos.ChaosWorkload.Action;
import dev.effectledger.client.StepContext;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;

/**
 * What a chaos run that stopped answering shows, read while its parts still run: the steps without
 * a final answer and the ledger's entry of each, the consumer groups' partitions whose committed
 * position is behind the end, the transactions left open on any partition, and the end of every
 * part's log. A run whose agents get no new answer for its stall limit ends with this instead of
 * waiting for the test's timeout ({@link ChaosRun.Timing#stallLimit}), which says nothing (a CI run
 * on 2026-11-26 timed out in the single-broker run after 600 s, its logs gone with the CI machine).
 */
final class ChaosStall {

  /** A transaction whose producer wrote nothing to a partition for this long is listed. */
  static final Duration SILENT = Duration.ofSeconds(30);

  private static final Duration ADMIN = Duration.ofSeconds(30);

  private final ChaosWorkload workload;
  private final HttpClient http;
  private final Properties kafka;
  private final int processorPort;
  private final Duration silent;

  /**
   * @param processorPort a processor's HTTP port, asked for the entries of unanswered steps
   * @param silent how long a transaction's producer must have written nothing to a partition to be
   *     listed ({@link #SILENT} in a run)
   */
  ChaosStall(
      ChaosWorkload workload,
      HttpClient http,
      Properties kafka,
      int processorPort,
      Duration silent) {
    this.workload = workload;
    this.http = http;
    this.kafka = kafka;
    this.processorPort = processorPort;
    this.silent = silent;
  }

  /**
   * The report, one fact a line; a part that cannot be read says why in its place.
   *
   * @param answered the steps with a final answer, each named by {@link #answerOf}
   */
  String describe(Set<String> answered, List<Node> parts) {
    List<String> lines = new ArrayList<>();
    unanswered(answered, lines);
    try (Admin admin = Admin.create(kafka)) {
      behind(admin, lines);
      openTransactions(admin, lines);
    } catch (Exception e) {
      lines.add("Kafka could not be read: " + e);
    }
    for (Node part : parts) {
      lines.add(
          part.name() + " (" + (part.alive() ? "running" : "not running") + "), its log ends:");
      try {
        ChaosDeployment.tail(part.log(), 8).forEach(l -> lines.add("    " + l));
      } catch (IOException e) {
        lines.add("    unreadable: " + e.getMessage());
      }
    }
    return String.join("\n", lines);
  }

  /**
   * Ends a run whose agents got no new answer for its stall limit ({@link
   * ChaosRun.Timing#stallLimit}): what the run showed goes to {@code stall.txt} in its directory,
   * to the output and into the exception.
   */
  static IllegalStateException stalled(
      ChaosRun.Options options,
      ChaosWorkload workload,
      HttpClient http,
      AgentAnswers answers,
      ChaosDeployment deployment,
      Properties kafka,
      List<Node> agents,
      int answered,
      int faults)
      throws IOException {
    List<Node> parts = new ArrayList<>();
    parts.add(deployment.cluster());
    parts.addAll(deployment.processors());
    parts.addAll(deployment.executors());
    parts.addAll(agents);
    String report =
        String.format(
            "stalled: no new answer for %d s at %d of %d steps (%d faults so far); what the run showed:%n%s",
            options.timing().stallLimit().toSeconds(),
            answered,
            answers.steps(),
            faults,
            new ChaosStall(workload, http, kafka, deployment.ports()[0], ChaosStall.SILENT)
                .describe(answers.answeredSteps(), parts));
    Files.writeString(options.dir().resolve("stall.txt"), report);
    ChaosRun.say(report);
    return new IllegalStateException(report);
  }

  /** How a step with a final answer is named in the set {@link #describe} is given. */
  static String answerOf(String runId, String stepId) {
    return runId + "/" + stepId;
  }

  /** The steps without a final answer, and the ledger's entry of the first ten. */
  private void unanswered(Set<String> answered, List<String> lines) {
    List<String> missing = new ArrayList<>();
    for (Action action : workload.all()) {
      for (StepContext step : action.steps()) {
        if (!answered.contains(answerOf(step.runId(), step.stepId()))) {
          missing.add(action.key(step));
        }
      }
    }
    lines.add(missing.size() + " steps without a final answer; the ledger's entries of the first:");
    for (String key : missing.subList(0, Math.min(10, missing.size()))) {
      lines.add("  " + key + ": " + entry(key));
    }
  }

  private String entry(String key) {
    try {
      HttpResponse<String> response =
          http.send(
              HttpRequest.newBuilder(ChaosChecks.entryUri(processorPort, key))
                  .timeout(Duration.ofSeconds(10))
                  .build(),
              HttpResponse.BodyHandlers.ofString());
      return "HTTP " + response.statusCode() + " " + response.body();
    } catch (IOException e) {
      return "not asked: " + e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "not asked: interrupted";
    }
  }

  /**
   * The groups' partitions more than one offset behind the end (one is the last transaction's
   * commit marker, never consumed).
   */
  private static void behind(Admin admin, List<String> lines) throws Exception {
    Map<TopicPartition, Long> positions = ChaosDeployment.positions(admin);
    for (String group : ChaosDeployment.GROUPS) {
      String prefix = group + ":";
      Map<TopicPartition, String> late = new TreeMap<>(ChaosStall::byName);
      positions.forEach(
          (key, committed) -> {
            if (key.topic().startsWith(prefix)) {
              TopicPartition tp =
                  new TopicPartition(key.topic().substring(prefix.length()), key.partition());
              long end = positions.getOrDefault(tp, committed);
              if (end - committed > 1) {
                late.put(tp, tp + " at " + committed + " of " + end);
              }
            }
          });
      lines.add(
          "group "
              + group
              + ": "
              + (late.isEmpty() ? "no partition behind" : "behind on " + late.values()));
    }
  }

  /** Every partition's transactions whose producer has been silent on it for {@code silent}. */
  private void openTransactions(Admin admin, List<String> lines) throws Exception {
    Set<String> topics =
        admin
            .listTopics(new org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(true))
            .names()
            .get(ADMIN.toSeconds(), TimeUnit.SECONDS);
    List<TopicPartition> partitions = new ArrayList<>();
    for (TopicDescription topic :
        admin
            .describeTopics(topics)
            .allTopicNames()
            .get(ADMIN.toSeconds(), TimeUnit.SECONDS)
            .values()) {
      topic
          .partitions()
          .forEach(p -> partitions.add(new TopicPartition(topic.name(), p.partition())));
    }
    Map<TopicPartition, PartitionProducerState> states =
        admin.describeProducers(partitions).all().get(ADMIN.toSeconds(), TimeUnit.SECONDS);
    long now = System.currentTimeMillis();
    Map<TopicPartition, String> open = new TreeMap<>(ChaosStall::byName);
    states.forEach(
        (tp, state) -> {
          for (ProducerState producer : state.activeProducers()) {
            if (producer.currentTransactionStartOffset().isPresent()
                && now - producer.lastTimestamp() > silent.toMillis()) {
              open.merge(
                  tp,
                  "producer "
                      + producer.producerId()
                      + " epoch "
                      + producer.producerEpoch()
                      + " open from offset "
                      + producer.currentTransactionStartOffset().getAsLong()
                      + ", silent "
                      + (now - producer.lastTimestamp()) / 1000
                      + " s",
                  (one, other) -> one + "; " + other);
            }
          }
        });
    lines.add(
        open.isEmpty()
            ? "no transaction silent for " + silent.toSeconds() + " s on any partition"
            : open.size() + " partitions with a transaction open and silent:");
    open.forEach((tp, what) -> lines.add("  " + tp + ": " + what));
  }

  private static int byName(TopicPartition a, TopicPartition b) {
    int topic = a.topic().compareTo(b.topic());
    return topic != 0 ? topic : Integer.compare(a.partition(), b.partition());
  }
}
