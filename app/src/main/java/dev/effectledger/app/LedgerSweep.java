package dev.effectledger.app;

import dev.effectledger.connectors.transactions.HangingSweep;
import dev.effectledger.connectors.transactions.HangingTransactions;
import dev.effectledger.schema.Topics;
import java.time.Clock;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.streams.StreamsConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The processor's side of hanging transactions (see {@link HangingTransactions}): a transaction of
 * the ledger's own producer left open on its changelogs, reply topics or audit topic, which no
 * coordinator will ever end, and behind which a restoring task (and every read_committed reader)
 * stops for good. Seen after the only broker's kill -9 in the single-broker chaos run: the
 * coordinator recorded the ledger's transaction as {@code CompleteCommit} while its commit markers
 * never reached three changelog partitions, and the processor was never ready again.
 *
 * <p>Every {@link #INTERVAL} it ends each one as its coordinator decided; when that can no longer
 * be told, it <em>commits</em> on these topics (an entry kept from an aborted transaction is a
 * duplicate the ledger answers and the pending timeout dispatches again; an entry forgotten from a
 * committed one lets a retry run a second effect) and, on the application's offsets partition,
 * commits a pending offset commit of the application's own producers. The dispatch topics are the
 * executors' sweep's.
 */
final class LedgerSweep implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(LedgerSweep.class);

  static final Duration INTERVAL = Duration.ofSeconds(30);

  /** Kafka Streams' default transaction timeout under exactly_once_v2. */
  private static final Duration STREAMS_TRANSACTION_TIMEOUT = Duration.ofSeconds(10);

  private final HangingTransactions hanging;
  private final HangingSweep sweep;
  private final Admin admin;
  private final String applicationId;
  private final ScheduledExecutorService timer;

  LedgerSweep(Properties kafka, String applicationId, Duration silentFor) {
    this.applicationId = applicationId;
    this.hanging = HangingTransactions.connect(kafka, silentFor);
    this.sweep = new HangingSweep(hanging, Clock.systemUTC());
    this.admin = hanging.admin();
    this.timer =
        Executors.newSingleThreadScheduledExecutor(
            r -> {
              Thread t = new Thread(r, "ledger-hanging-transaction-sweep");
              t.setDaemon(true);
              return t;
            });
  }

  /** Sweeps now and every {@link #INTERVAL}; a sweep that fails is tried again at the next. */
  static LedgerSweep start(Properties kafka) {
    LedgerSweep ledgerSweep =
        new LedgerSweep(
            kafka, kafka.getProperty(StreamsConfig.APPLICATION_ID_CONFIG), silentFor(kafka));
    ledgerSweep.timer.scheduleWithFixedDelay(
        () -> {
          try {
            ledgerSweep.sweepOnce();
          } catch (RuntimeException e) {
            log.debug(
                "Sweeping the ledger's topics for hanging transactions failed: {}", e.toString());
          }
        },
        0,
        INTERVAL.toMillis(),
        TimeUnit.MILLISECONDS);
    return ledgerSweep;
  }

  /**
   * How long a producer must be silent on a partition before its open transaction there can be
   * hanging: twice the transaction timeout, plus the coordinator's 10-s abort interval.
   */
  static Duration silentFor(Properties kafka) {
    Object configured =
        kafka.getOrDefault(
            StreamsConfig.producerPrefix(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG),
            kafka.get(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG));
    Duration timeout =
        configured == null
            ? STREAMS_TRANSACTION_TIMEOUT
            : Duration.ofMillis(Long.parseLong(configured.toString().trim()));
    return timeout.multipliedBy(2).plusSeconds(10);
  }

  /** The ledger's changelogs, its reply topics ({@code tool-results[.suffix]}) and its audit. */
  static List<String> ledgerTopics(Collection<String> all, String applicationId) {
    return all.stream()
        .filter(
            t ->
                (t.startsWith(applicationId + "-") && t.endsWith("-changelog"))
                    || t.equals(Topics.RESULTS)
                    || t.startsWith(Topics.RESULTS + ".")
                    || t.equals(Topics.AUDIT))
        .sorted()
        .toList();
  }

  /**
   * @return how many hanging transactions it ended
   */
  int sweepOnce() {
    Set<String> all;
    try {
      all =
          admin
              .listTopics(new ListTopicsOptions().listInternal(true))
              .names()
              .get(30, TimeUnit.SECONDS);
    } catch (Exception e) {
      throw new IllegalStateException("Could not list topics: " + e, e);
    }
    // Before any group committed offsets the offsets topic does not exist yet: nothing to end
    // there.
    String group = all.contains(Topic.GROUP_METADATA_TOPIC_NAME) ? applicationId : null;
    return sweep.sweep(
        ledgerTopics(all, applicationId), group, id -> id.startsWith(applicationId + "-"), true);
  }

  @Override
  public void close() {
    timer.shutdownNow();
    hanging.close();
  }
}
