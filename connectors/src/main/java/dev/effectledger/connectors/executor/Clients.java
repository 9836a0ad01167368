package dev.effectledger.connectors.executor;

import dev.effectledger.connectors.executor.internal.JournalReader;
import dev.effectledger.connectors.transactions.HangingSweep;
import dev.effectledger.connectors.transactions.HangingTransactions;
import dev.effectledger.schema.Topics;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Kafka clients an executor uses, with the settings it needs of them; tests pass mocks.
 *
 * @param consumer the dispatch consumer: read_committed, manual commits, in the executor's group
 * @param producer the transactional producer of outcomes, effect records and journal markers
 * @param journalReader opens the attempt-journal reader of the given lanes
 * @param hanging what the executor does about transactions no coordinator will end
 */
record Clients(
    Consumer<byte[], byte[]> consumer,
    Producer<byte[], byte[]> producer,
    Function<List<String>, JournalReader> journalReader,
    Hanging hanging) {

  private static final Logger log = LoggerFactory.getLogger(Clients.class);

  /**
   * What an executor does about hanging transactions (see {@link HangingTransactions}) on what it
   * writes and reads, other than its attempt journal (which its {@link JournalReader} repairs).
   */
  interface Hanging {

    /** Nothing: for tests without a cluster. */
    Hanging NONE =
        new Hanging() {
          @Override
          public void settlePredecessor() {}

          @Override
          public AutoCloseable sweep() {
            return () -> {};
          }
        };

    /**
     * Before the producer's {@code initTransactions}: ends what the predecessor under the same
     * transactional id left open as its coordinator decided, while the coordinator still knows.
     */
    void settlePredecessor();

    /**
     * Starts ending the hanging transactions of the outcome topic, of the lanes' dispatch topics
     * and of the group's offsets, every {@link #sweepInterval}, until closed.
     */
    AutoCloseable sweep();
  }

  /** Clients that sweep nothing. */
  Clients(
      Consumer<byte[], byte[]> consumer,
      Producer<byte[], byte[]> producer,
      Function<List<String>, JournalReader> journalReader) {
    this(consumer, producer, journalReader, Hanging.NONE);
  }

  /**
   * The transaction timeout unless the settings name one: short, so a killed executor's open
   * transaction ends soon.
   */
  static final Duration TRANSACTION_TIMEOUT = Duration.ofSeconds(10);

  /**
   * Unfinished dispatches per unit of concurrency: the executor pauses its consumer there, and one
   * poll returns at most that many records.
   */
  static final int BACKLOG_PER_WORKER = 4;

  /**
   * How often the outcome topic is swept for hanging transactions (which hold the ledger back, not
   * the executor).
   */
  static final Duration SWEEP_INTERVAL = Duration.ofSeconds(30);

  /**
   * How long past its transaction timeout a transaction is given before it can be hanging: the
   * broker's default interval between its aborts of timed-out transactions.
   */
  private static final Duration COORDINATOR_ABORT_INTERVAL = Duration.ofSeconds(10);

  /**
   * The producer's {@code retry.backoff.ms} unless the settings name one, against Kafka's 100 ms. A
   * transaction that starts while the one before it is still writing its commit markers is told
   * {@code CONCURRENT_TRANSACTIONS}; the producer retries the first add of partitions after 20 ms,
   * but the add of the consumer offsets ({@code sendOffsetsToTransaction}, which the executor's
   * loop waits for) after {@code retry.backoff.ms}. Measured in {@code bench/run latency} at a 20
   * ms commit interval: 41 of 87 commits that took over 40 ms spent 100-152 ms waiting for the
   * offsets, none of 122 with this setting (docs/performance.md). Repeated errors still back off
   * exponentially up to {@code retry.backoff.max.ms} (1 s).
   */
  static final Duration RETRY_BACKOFF = Duration.ofMillis(10);

  /** Real clients for {@code config}, the producer under {@code transactionalId}. */
  static Clients kafka(ExecutorConfig config, String transactionalId) {
    Properties producerProps = producerProps(config, transactionalId);
    Duration hangingAfter = hangingAfter(producerProps);
    KafkaProducer<byte[], byte[]> producer =
        new KafkaProducer<>(producerProps, new ByteArraySerializer(), new ByteArraySerializer());
    return new Clients(
        new KafkaConsumer<>(
            consumerProps(config), new ByteArrayDeserializer(), new ByteArrayDeserializer()),
        producer,
        lanes -> JournalReader.open(config.kafka(), lanes, producer, hangingAfter),
        new Hanging() {
          @Override
          public void settlePredecessor() {
            if (config.instanceId() == null) {
              return; // a random transactional id has no predecessor
            }
            List<String> topics = new ArrayList<>(sweptTopics(config));
            config.lanes().forEach(lane -> topics.add(Topics.attempts(lane)));
            try (HangingTransactions hanging =
                HangingTransactions.connect(config.kafka(), hangingAfter)) {
              new HangingSweep(hanging, Clock.systemUTC())
                  .settlePredecessor(transactionalId, topics, config.groupId());
            } catch (RuntimeException e) {
              log.warn(
                  "Could not look for transactions the predecessor of {} left open ({}); the"
                      + " hanging-transaction sweep ends them later, aborting those whose fate"
                      + " its coordinator no longer knows",
                  transactionalId,
                  e.getMessage());
            }
          }

          @Override
          public AutoCloseable sweep() {
            HangingTransactions hanging = HangingTransactions.connect(config.kafka(), hangingAfter);
            AutoCloseable sweep =
                new HangingSweep(hanging, Clock.systemUTC())
                    .sweepEvery(
                        sweepInterval(hangingAfter),
                        sweptTopics(config),
                        config.groupId(),
                        id -> ours(config, id));
            return () -> {
              sweep.close();
              hanging.close();
            };
          }
        });
  }

  /**
   * Whether {@code transactionalId} is one of the executors of {@code config}'s group: {@code
   * <groupId>-<instanceId>} or {@code <transactionalIdPrefix>-<random>}.
   */
  static boolean ours(ExecutorConfig config, String transactionalId) {
    return transactionalId.startsWith(config.groupId() + "-")
        || transactionalId.startsWith(config.transactionalIdPrefix() + "-");
  }

  /**
   * The topics whose hanging transactions an executor aborts: the outcome topic (read by the
   * ledger; an outcome lost there is answered again by the ledger's pending timeout or a lookup)
   * and its lanes' dispatch topics (which it reads; a dispatch lost there is sent again by the
   * pending timeout). The attempt journal is repaired, not swept: see {@link JournalReader}.
   */
  static List<String> sweptTopics(ExecutorConfig config) {
    List<String> topics = new ArrayList<>();
    topics.add(Topics.OUTCOMES);
    config.lanes().forEach(lane -> topics.add(Topics.dispatch(lane)));
    return topics;
  }

  /**
   * How often the sweep looks: every {@link #SWEEP_INTERVAL}, or every {@code hangingAfter} when
   * that is shorter (short transaction timeouts), so that a transaction is ended at most one
   * interval after it can be told hanging. The test for hanging is the same either way.
   */
  static Duration sweepInterval(Duration hangingAfter) {
    return hangingAfter.compareTo(SWEEP_INTERVAL) < 0 ? hangingAfter : SWEEP_INTERVAL;
  }

  /**
   * Twice the transaction timeout and the coordinator's abort interval: a transaction its
   * coordinator knows has ended by then.
   */
  static Duration hangingAfter(Properties producerProps) {
    Duration timeout =
        Duration.ofMillis(
            Long.parseLong(
                producerProps.get(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG).toString()));
    return timeout.multipliedBy(2).plus(COORDINATOR_ABORT_INTERVAL);
  }

  private static Properties consumerProps(ExecutorConfig config) {
    Properties props = new Properties();
    props.putAll(config.kafka());
    props.put(ConsumerConfig.GROUP_ID_CONFIG, config.groupId());
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.putIfAbsent(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.putIfAbsent(
        ConsumerConfig.MAX_POLL_RECORDS_CONFIG, config.concurrency() * 4); // one backlog per poll
    if (config.instanceId() != null) {
      props.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, config.instanceId());
    }
    return props;
  }

  static Properties producerProps(ExecutorConfig config, String transactionalId) {
    Properties props = new Properties();
    props.putAll(config.kafka());
    props.remove(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG);
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    props.put(ProducerConfig.ACKS_CONFIG, "all");
    props.putIfAbsent(
        ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, (int) TRANSACTION_TIMEOUT.toMillis());
    props.putIfAbsent(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, (int) RETRY_BACKOFF.toMillis());
    return props;
  }
}
