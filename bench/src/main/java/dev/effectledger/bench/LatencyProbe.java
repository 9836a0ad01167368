package dev.effectledger.bench;

import dev.effectledger.bench.LatencyBench.Point;
import dev.effectledger.embedded.EmbeddedKafkaCluster;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.KafkaStreams;

/**
 * The measurement loop of {@code bench/run latency}: sends unique keys at a fixed load, reads each
 * key's stages and answer (read_committed), and takes one {@link Point} of it, its hops among them.
 */
final class LatencyProbe {

  private LatencyProbe() {}

  /** The value sent for key {@code key}, the {@code id}th of its run. */
  interface Values {
    byte[] value(String key, long id);
  }

  /**
   * Sends unique keys at {@code load}/s for warm-up plus measured seconds, and records, for each
   * key sent after the warm-up, the time until its first answer on {@code output} (read_committed).
   * The same reader follows the {@code stages} topics (committed records keyed like the input), so
   * the time is split into hops: send to the first stage, each stage to the next, the last to the
   * answer.
   */
  static Point measure(
      EmbeddedKafkaCluster kafka,
      KafkaStreams streams,
      int commitMs,
      int executorMs,
      int load,
      int warmup,
      int seconds,
      String side,
      String input,
      String output,
      List<String> stages,
      Values values,
      LongSupplier executorCommits)
      throws Exception {
    streams.start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (streams.state() != KafkaStreams.State.RUNNING && System.nanoTime() < deadline) {
      TimeUnit.MILLISECONDS.sleep(50); // waiting for the Streams client to run
    }
    Map<String, Long> sentAt = new ConcurrentHashMap<>();
    Histogram histogram = new Histogram(TimeUnit.SECONDS.toMicros(120), 3);
    Histogram toLastStage = new Histogram(TimeUnit.SECONDS.toMicros(120), 3);
    Map<String, long[]> stageSeen = new ConcurrentHashMap<>();
    List<Histogram> hopHistograms = new ArrayList<>();
    for (int h = 0; h <= stages.size() && !stages.isEmpty(); h++) {
      hopHistograms.add(new Histogram(TimeUnit.SECONDS.toMicros(120), 3));
    }
    AtomicBoolean sending = new AtomicBoolean(true);
    long[] answered = new long[1];
    Properties cp = new Properties();
    cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    cp.put(ConsumerConfig.GROUP_ID_CONFIG, "latency-reader-" + side.hashCode());
    cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    cp.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 5);
    cp.put(ConsumerConfig.METADATA_MAX_AGE_CONFIG, 1_000);
    String prefix = side.startsWith("ledger") ? "l-" : "b-";
    Thread reader =
        new Thread(
            () -> {
              try (KafkaConsumer<String, byte[]> consumer =
                  new KafkaConsumer<>(cp, new StringDeserializer(), new ByteArrayDeserializer())) {
                List<String> topics = new ArrayList<>(stages);
                topics.add(output);
                consumer.subscribe(topics);
                long drainUntil = Long.MAX_VALUE;
                while (System.nanoTime() < drainUntil) {
                  var records = consumer.poll(Duration.ofMillis(20));
                  long now =
                      System.nanoTime(); // after the poll: it can block past its timeout while
                  // joining the group
                  for (ConsumerRecord<String, byte[]> record : records) {
                    int stage = stages.indexOf(record.topic());
                    if (stage >= 0) {
                      Long sent = sentAt.get(record.key());
                      if (sent != null) {
                        long[] seen =
                            stageSeen.computeIfAbsent(record.key(), k -> new long[stages.size()]);
                        if (seen[stage] == 0 && stage == stages.size() - 1) {
                          toLastStage.recordValue(
                              Math.min(
                                  (now - sent) / 1_000, toLastStage.getHighestTrackableValue()));
                        }
                        seen[stage] = seen[stage] == 0 ? now : seen[stage];
                      }
                      continue;
                    }
                    Long sent = sentAt.remove(record.key());
                    if (sent != null) {
                      long micros = (now - sent) / 1_000;
                      histogram.recordValue(Math.min(micros, histogram.getHighestTrackableValue()));
                      answered[0]++;
                      recordHops(hopHistograms, sent, stageSeen.remove(record.key()), now);
                    }
                  }
                  if (!sending.get() && drainUntil == Long.MAX_VALUE) {
                    drainUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                  }
                  if (!sending.get() && sentAt.isEmpty()) {
                    break;
                  }
                }
              }
            },
            "latency-reader");
    reader.start();
    Properties pp = new Properties();
    pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    pp.put(ProducerConfig.LINGER_MS_CONFIG, 0);
    long sent = 0;
    long measuredFrom = System.nanoTime();
    Map<String, Double> atWindowStart = CommitProfile.read(streams);
    CpuSplit.Reading cpuAtWindowStart = CpuSplit.read();
    long executorCommitsAtWindowStart = executorCommits.getAsLong();
    CpuSplit.Reading cpuAtWindowEnd;
    try (KafkaProducer<String, byte[]> producer =
        new KafkaProducer<>(pp, new StringSerializer(), new ByteArraySerializer())) {
      long start = System.nanoTime();
      long total = (long) load * (warmup + seconds);
      long warmupCount = (long) load * warmup;
      for (long i = 0; i < total; i++) {
        if (i == warmupCount) {
          measuredFrom = System.nanoTime();
          atWindowStart = CommitProfile.read(streams);
          cpuAtWindowStart = CpuSplit.read();
          executorCommitsAtWindowStart = executorCommits.getAsLong();
        }
        long due = start + i * 1_000_000_000L / load;
        long wait = due - System.nanoTime();
        if (wait > 0) {
          LockSupport.parkNanos(wait); // pacing the offered load
        }
        String key = "v1:" + prefix + i;
        if (i >= warmupCount) {
          sentAt.put(key, System.nanoTime());
          sent++;
        }
        producer.send(new ProducerRecord<>(input, key, values.value(key, i)));
      }
      cpuAtWindowEnd = CpuSplit.read(); // before the load's producer and its thread end
    }
    sending.set(false);
    double windowSeconds = (System.nanoTime() - measuredFrom) / 1_000_000_000.0;
    double cpuSeconds =
        (cpuAtWindowEnd.processAt() - cpuAtWindowStart.processAt()) / 1_000_000_000.0;
    CommitProfile commits =
        CommitProfile.between(atWindowStart, CommitProfile.read(streams), windowSeconds);
    CpuSplit cpu = CpuSplit.between(cpuAtWindowStart, cpuAtWindowEnd, cpuSeconds);
    double executorCommitsPerSecond =
        (executorCommits.getAsLong() - executorCommitsAtWindowStart) / windowSeconds;
    reader.join(TimeUnit.SECONDS.toMillis(30));
    Point point =
        new Point(
            commitMs,
            executorMs,
            load,
            side,
            sent,
            answered[0],
            histogram.getValueAtPercentile(50) / 1000.0,
            histogram.getValueAtPercentile(99) / 1000.0,
            histogram.getValueAtPercentile(99.9) / 1000.0,
            hopHistograms.stream()
                .map(
                    h ->
                        new double[] {
                          h.getValueAtPercentile(50) / 1000.0, h.getValueAtPercentile(99) / 1000.0
                        })
                .toList(),
            stages.isEmpty()
                ? new double[0]
                : new double[] {
                  toLastStage.getValueAtPercentile(50) / 1000.0,
                  toLastStage.getValueAtPercentile(99) / 1000.0,
                  toLastStage.getValueAtPercentile(99.9) / 1000.0
                },
            commits,
            executorCommitsPerSecond,
            cpu);
    Bench.say(
        String.format(
            "commit.interval.ms=%-3d load %,6d/s %-38s p50 %7.1f ms  p99 %7.1f ms  p99.9 %7.1f ms  (%,d of %,d answered)",
            commitMs,
            load,
            side,
            point.p50(),
            point.p99(),
            point.p999(),
            point.answered(),
            point.sent()));
    for (int h = 0; h < point.hops().size(); h++) {
      Bench.say(
          String.format(
              "    %-42s p50 %7.1f ms  p99 %7.1f ms",
              LatencyBench.HOPS.get(h), point.hops().get(h)[0], point.hops().get(h)[1]));
    }
    Bench.say("    Streams commits: " + commits.summary());
    Bench.say("    CPU, ms/s: " + cpu.summary());
    if (point.toLastStage().length > 0) {
      Bench.say(
          String.format(
              "    %-42s p50 %7.1f ms  p99 %7.1f ms",
              "send to committed outcome", point.toLastStage()[0], point.toLastStage()[1]));
    }
    return point;
  }

  /**
   * Adds one answered key's hops: send to the first stage, stage to stage, last stage to the
   * answer. A key whose stages the reader did not all see (the poll that saw the answer saw a stage
   * too late, or not at all) is left out of the hops, not of the end-to-end figure.
   */
  static void recordHops(List<Histogram> hops, long sent, long[] seen, long answeredAt) {
    if (hops.isEmpty() || seen == null) {
      return;
    }
    long previous = sent;
    for (long at : seen) {
      if (at == 0 || at < previous) {
        return;
      }
      previous = at;
    }
    previous = sent;
    for (int h = 0; h < seen.length; h++) {
      hops.get(h)
          .recordValue(
              Math.min((seen[h] - previous) / 1_000, hops.get(h).getHighestTrackableValue()));
      previous = seen[h];
    }
    Histogram last = hops.get(seen.length);
    last.recordValue(
        Math.min(Math.max(0, answeredAt - previous) / 1_000, last.getHighestTrackableValue()));
  }
}
