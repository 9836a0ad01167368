package dev.effectledger.bench;

import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.streams.KafkaStreams;

/**
 * Where a Kafka Streams client's commits went during a measured window, from the totals its stream
 * threads and transactional producers keep (differences of two readings): commits, records sent per
 * commit, and the milliseconds per commit spent flushing the producer, adding the consumed offsets
 * to the transaction and committing it; punctuations and the threads' time blocked on Kafka per
 * second. A record, so a report can set the ledger's commits beside the baseline's.
 *
 * @param commits task commits in the window (all stream threads)
 * @param recordsPerCommit records the producers sent per commit
 * @param flushMs producer flush per commit, ms
 * @param offsetsMs adding the consumed offsets to the transaction per commit, ms
 * @param commitMs committing the transaction per commit, ms
 * @param punctuationsPerSecond punctuator calls per second of the window
 * @param blockedMsPerSecond the threads' time blocked on Kafka (polls, commits), ms per second
 * @param longestCommitMs the longest commit of any thread, ms (Kafka Streams' windowed maximum, so
 *     it may reach back before the window)
 * @param longestPunctuationMs the longest punctuation of any thread, ms (windowed likewise)
 */
record CommitProfile(
    long commits,
    double recordsPerCommit,
    double flushMs,
    double offsetsMs,
    double commitMs,
    double punctuationsPerSecond,
    double blockedMsPerSecond,
    double longestCommitMs,
    double longestPunctuationMs) {

  static final CommitProfile NONE = new CommitProfile(0, 0, 0, 0, 0, 0, 0, 0, 0);

  /**
   * The totals this profile is made of, summed over threads and producers, and the threads' longest
   * commit and punctuation, read now.
   */
  static Map<String, Double> read(KafkaStreams streams) {
    Map<String, Double> totals = new HashMap<>();
    for (Map.Entry<MetricName, ? extends Metric> e : streams.metrics().entrySet()) {
      MetricName name = e.getKey();
      boolean thread = name.group().equals("stream-thread-metrics");
      boolean producer = name.group().equals("producer-metrics");
      if (!(thread || producer) || !(e.getValue().metricValue() instanceof Number n)) {
        continue;
      }
      String key = (thread ? "thread:" : "producer:") + name.name();
      if (name.name().endsWith("-total")) {
        totals.merge(key, n.doubleValue(), Double::sum);
      } else if (thread
          && (name.name().equals("commit-latency-max")
              || name.name().equals("punctuate-latency-max"))
          && !Double.isNaN(n.doubleValue())) {
        totals.merge(key, n.doubleValue(), Math::max);
      }
    }
    return totals;
  }

  /** The profile of the window between two readings {@code seconds} apart. */
  static CommitProfile between(
      Map<String, Double> before, Map<String, Double> after, double seconds) {
    long commits = (long) delta(before, after, "thread:commit-total");
    if (commits == 0) {
      return NONE;
    }
    double ns = 1_000_000.0 * commits;
    return new CommitProfile(
        commits,
        delta(before, after, "producer:record-send-total") / commits,
        delta(before, after, "producer:flush-time-ns-total") / ns,
        delta(before, after, "producer:txn-send-offsets-time-ns-total") / ns,
        delta(before, after, "producer:txn-commit-time-ns-total") / ns,
        delta(before, after, "thread:punctuate-total") / seconds,
        delta(before, after, "thread:blocked-time-ns-total") / 1_000_000.0 / seconds,
        after.getOrDefault("thread:commit-latency-max", 0.0),
        after.getOrDefault("thread:punctuate-latency-max", 0.0));
  }

  private static double delta(Map<String, Double> before, Map<String, Double> after, String key) {
    return after.getOrDefault(key, 0.0) - before.getOrDefault(key, 0.0);
  }

  /** One line for the console. */
  String summary() {
    return String.format(
        "%,d commits, %.0f records each; per commit ms: flush %.1f, offsets %.1f, commit %.1f;"
            + " %.0f punctuations/s; blocked on Kafka %.0f ms/s; longest commit %.0f ms,"
            + " punctuation %.0f ms",
        commits,
        recordsPerCommit,
        flushMs,
        offsetsMs,
        commitMs,
        punctuationsPerSecond,
        blockedMsPerSecond,
        longestCommitMs,
        longestPunctuationMs);
  }
}
