package dev.effectledger.bench;

import dev.effectledger.bench.Bench.Run;
import dev.effectledger.topology.LedgerTopology;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;

/**
 * The measurement loop of the throughput runs: Kafka Streams clients run from the start of their
 * input until their group has committed past every record, with the group's committed progress and
 * the CPU clocks (the process's, the stream threads', the JIT compilers') each {@link Run} is taken
 * from.
 */
final class StreamsMeter {

  private StreamsMeter() {}

  /**
   * Runs {@code instances} Kafka Streams clients of one application, {@code threads} stream threads
   * each, on the cluster at {@code bootstrap}, from the start of the input until they have
   * committed past every record.
   */
  static Run measure(
      String bootstrap,
      String name,
      String guarantee,
      Supplier<Topology> topology,
      String input,
      String applicationId,
      int records,
      int instances,
      int threads)
      throws Exception {
    List<KafkaStreams> clients = new ArrayList<>();
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
    props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
    // The same commit interval for both guarantees (at_least_once defaults to 30 s, which would
    // measure the interval, not the work); progress is read from committed offsets.
    props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
    if (name.equals(Bench.SMALL_BATCHES)) {
      props.put(StreamsConfig.producerPrefix(ProducerConfig.BATCH_SIZE_CONFIG), 16 * 1024);
    } else if (name.equals(Bench.TRANSACTIONAL_STORES_OFF)) {
      props.put(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, false);
    } else if (name.equals(Bench.BASELINE_BATCHED)) {
      props.put(
          StreamsConfig.producerPrefix(ProducerConfig.BATCH_SIZE_CONFIG),
          LedgerTopology.PRODUCER_BATCH_BYTES);
    }
    Properties effective =
        name.startsWith("ledger") ? LedgerTopology.streamsProperties(props) : props;
    for (int i = 0; i < instances; i++) {
      Properties own = new Properties();
      own.putAll(effective);
      own.put(StreamsConfig.STATE_DIR_CONFIG, Bench.stateDir("bench-state").toString());
      clients.add(new KafkaStreams(topology.get(), own));
    }
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      Map<TopicPartition, Long> end = new HashMap<>();
      for (int p = 0; p < Bench.PARTITIONS; p++) {
        TopicPartition tp = new TopicPartition(input, p);
        end.put(
            tp, admin.listOffsets(Map.of(tp, OffsetSpec.latest())).all().get().get(tp).offset());
      }
      long total = end.values().stream().mapToLong(Long::longValue).sum();
      SteadyRate steady = new SteadyRate(total);
      long start = System.nanoTime();
      clients.forEach(KafkaStreams::start);
      long done;
      while ((done = committed(admin, applicationId, end)) < total) {
        steady.sample(System.nanoTime(), done, processCpuNanos(), compileNanos());
        // Polling the committed offsets: the measure's resolution, a request to the broker each.
        TimeUnit.MILLISECONDS.sleep(20);
      }
      long finished = System.nanoTime();
      double processMicros = steady.cpuMicrosPerRecord(processCpuNanos());
      double compileMicros = steady.compileMicrosPerRecord(compileNanos());
      double seconds = (finished - start) / 1e9;
      double wholeRun = records / seconds;
      double perSecond = steady.perSecond(finished, wholeRun);
      double cpuMicros = streamThreadCpuNanos(applicationId) / 1e3 / records;
      Bench.say(
          String.format(
              "%-8s %-16s %d×%d threads %,10.0f intents/s past start-up (%,.0f over the whole %.1f"
                  + " s), stream threads %.1f µs CPU per intent, the process %.1f past start-up"
                  + " (JIT compiling %.1f)",
              name,
              guarantee,
              instances,
              threads,
              perSecond,
              wholeRun,
              seconds,
              cpuMicros,
              processMicros,
              compileMicros));
      return new Run(name, guarantee, perSecond, wholeRun, cpuMicros, processMicros, compileMicros);
    } finally {
      clients.forEach(KafkaStreams::close);
    }
  }

  /** The CPU time so far of this whole process: the broker, the clients, the JIT, the GC. */
  static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  /**
   * The time the JVM's JIT compilers have spent so far ({@link
   * java.lang.management.CompilationMXBean#getTotalCompilationTime}, summed over the compiler
   * threads); 0 where the JVM does not tell.
   */
  static long compileNanos() {
    var jit = ManagementFactory.getCompilationMXBean();
    return jit != null && jit.isCompilationTimeMonitoringSupported()
        ? TimeUnit.MILLISECONDS.toNanos(jit.getTotalCompilationTime())
        : 0;
  }

  /**
   * The CPU time so far of the live stream threads of application {@code applicationId} (Kafka
   * Streams names them {@code <application id>-<uuid>-StreamThread-<n>}).
   */
  static long streamThreadCpuNanos(String applicationId) {
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long total = 0;
    for (Thread thread : Thread.getAllStackTraces().keySet()) {
      String name = thread.getName();
      if (name.startsWith(applicationId + "-") && name.contains("-StreamThread-")) {
        long cpu = threads.getThreadCpuTime(thread.getId());
        total += Math.max(0, cpu);
      }
    }
    return total;
  }

  /** Whether group {@code group} has committed every partition up to its {@code end}. */
  static boolean caughtUp(Admin admin, String group, Map<TopicPartition, Long> end)
      throws Exception {
    return committed(admin, group, end) >= end.values().stream().mapToLong(Long::longValue).sum();
  }

  /**
   * How many of the input's records group {@code group} has committed: its committed offsets, each
   * partition's counted up to its {@code end}.
   */
  static long committed(Admin admin, String group, Map<TopicPartition, Long> end) throws Exception {
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
    long done = 0;
    for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
      OffsetAndMetadata offset = committed.get(e.getKey());
      done += offset == null ? 0 : Math.min(offset.offset(), e.getValue());
    }
    return done;
  }
}
