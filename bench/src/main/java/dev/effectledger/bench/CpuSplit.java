package dev.effectledger.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a bench JVM's CPU went during a measured window, by part, from the threads' CPU clocks: the
 * Kafka Streams stream threads (and their state updaters), the executor's poll and effect threads,
 * the clients' I/O threads (producers' senders, consumers' heartbeats), the load and the reader of
 * the probe, the embedded broker (every other Java thread), and the JVM's own work (the process's
 * CPU less its Java threads': garbage collection, the JIT compilers, and threads that ended in the
 * window). Every part of a latency point runs in one JVM, so this is the machine's use apart from
 * the OS.
 *
 * @param perSecond CPU milliseconds per second of the window, by part, in {@link #PARTS}' order
 * @param processPerSecond the whole process's CPU milliseconds per second of the window
 */
record CpuSplit(Map<String, Double> perSecond, double processPerSecond) {

  static final List<String> PARTS =
      List.of(
          "stream threads",
          "executor",
          "client I/O",
          "load and reader",
          "broker and the rest",
          CpuSplit.JVM);

  static final String JVM = "JVM (GC, JIT), threads ended";

  static final CpuSplit NONE = new CpuSplit(Map.of(), 0);

  /**
   * The CPU clocks at one moment: each live Java thread's, with the part it belongs to, and the
   * process's; {@code processAt} the moment ({@link System#nanoTime()}).
   */
  record Reading(
      Map<Long, Long> threadNanos,
      Map<Long, String> threadParts,
      long processNanos,
      long processAt) {}

  static Reading read() {
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    Map<Long, Long> nanos = new HashMap<>();
    Map<Long, String> parts = new HashMap<>();
    for (Thread thread : Thread.getAllStackTraces().keySet()) {
      long cpu = threads.getThreadCpuTime(thread.getId());
      if (cpu >= 0) {
        nanos.put(thread.getId(), cpu);
        parts.put(thread.getId(), part(thread.getName()));
      }
    }
    return new Reading(nanos, parts, processNanos(), System.nanoTime());
  }

  /**
   * The split of the window between two readings {@code seconds} apart: each thread alive at the
   * second reading counts what its clock moved since the first (from zero if it started since); the
   * JVM's own part is the process's CPU less those, so it also holds what threads that ended in the
   * window had used.
   */
  static CpuSplit between(Reading before, Reading after, double seconds) {
    Map<String, Long> nanos = new LinkedHashMap<>();
    PARTS.forEach(p -> nanos.put(p, 0L));
    long threads = 0;
    for (Map.Entry<Long, Long> t : after.threadNanos().entrySet()) {
      long used = Math.max(0, t.getValue() - before.threadNanos().getOrDefault(t.getKey(), 0L));
      nanos.merge(after.threadParts().get(t.getKey()), used, Long::sum);
      threads += used;
    }
    long process = after.processNanos() - before.processNanos();
    nanos.put(JVM, Math.max(0, process - threads));
    Map<String, Double> perSecond = new LinkedHashMap<>();
    nanos.forEach((part, n) -> perSecond.put(part, n / 1e6 / seconds));
    return new CpuSplit(perSecond, process / 1e6 / seconds);
  }

  static String part(String thread) {
    if (thread.startsWith("kafka-producer-network-thread")
        || thread.startsWith("kafka-coordinator-heartbeat-thread")) {
      return "client I/O"; // before the stream threads: a Streams producer's is named after one
    }
    if (thread.contains("-StreamThread-") || thread.contains("-StateUpdater-")) {
      return "stream threads";
    }
    if (thread.startsWith("executor-poll-") || thread.startsWith("effect-worker")) {
      return "executor";
    }
    if (thread.equals("main") || thread.equals("latency-reader")) {
      return "load and reader";
    }
    return "broker and the rest";
  }

  /** One line for the progress output. */
  String summary() {
    StringBuilder s = new StringBuilder(String.format("process %.0f ms/s:", processPerSecond));
    perSecond.forEach((part, ms) -> s.append(String.format(" %s %.0f,", part, ms)));
    return s.substring(0, s.length() - 1);
  }

  private static long processNanos() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return os.getProcessCpuTime();
    }
    return 0;
  }
}
