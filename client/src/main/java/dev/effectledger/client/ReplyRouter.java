package dev.effectledger.client;

import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordDeserializationException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one reader of a reply topic for calls waiting in this process, the client's ({@link
 * ToolCallClient}) and the HTTP gateway's: read_committed consumers without a group, each on a
 * thread of its own, handing every reply to the listeners of its key. Waiting calls cost a map
 * entry, not a thread. A key's replies all come on one partition, so one thread answers them in
 * order.
 *
 * <p>Two ways to choose the partitions: {@link #everyPartition} reads all of them from the start,
 * spread over several consumers by partition number modulo their count (a gateway: every partition
 * carries calls, and one poll brings one executor commit's replies, hundreds at 2,000 calls/s);
 * {@link #onDemand} reads a partition from the first {@link #watch} of it (a client: it reads only
 * the partitions its own keys reply on). Either way a partition is read from its end as it was when
 * first positioned, before any intent answered there is published, so no reply is missed and none
 * older is read.
 *
 * <p>A record that is not a reply (its value does not deserialize) is logged and skipped: one bad
 * record must not stop the replies of every waiting call.
 */
public final class ReplyRouter implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ReplyRouter.class);

  /** Gets every reply on a key it listens to. */
  public interface Listener {
    /**
     * @param requestId the request id of the intent the reply answers, when the intent had one
     * @param through for a release's reply, the offset of the last intent it answers ({@link
     *     PendingReply#through}); null otherwise
     */
    void onReply(ToolResult reply, String requestId, Long through);
  }

  private record Watch(TopicPartition partition, CompletableFuture<Void> ready) {}

  private final String topic;
  private final Map<String, Set<Listener>> listeners = new ConcurrentHashMap<>();
  private final List<Reader> readers;

  private ReplyRouter(
      Properties kafka,
      String topic,
      Supplier<Deserializer<ToolResult>> values,
      int threads,
      boolean every,
      String threadName) {
    this.topic = topic;
    List<Reader> all = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      String name = threads == 1 ? threadName : threadName + "-" + i;
      all.add(new Reader(kafka, values.get(), i, threads, every, name));
    }
    this.readers = List.copyOf(all);
    readers.forEach(r -> r.thread.start());
  }

  /**
   * Reads every partition of {@code topic} from its end, with {@code threads} consumers ({@code
   * threads} values from {@code values}: a deserializer is not shared between threads).
   */
  public static ReplyRouter everyPartition(
      Properties kafka,
      String topic,
      Supplier<Deserializer<ToolResult>> values,
      int threads,
      String threadName) {
    if (threads < 1) {
      throw new IllegalArgumentException("threads must be at least 1, was " + threads);
    }
    return new ReplyRouter(kafka, topic, values, threads, true, threadName);
  }

  /** Reads a partition of {@code topic} from its end once it is first {@link #watch}ed. */
  public static ReplyRouter onDemand(
      Properties kafka, String topic, Deserializer<ToolResult> values, String threadName) {
    return new ReplyRouter(kafka, topic, () -> values, 1, false, threadName);
  }

  /**
   * Completes once {@code partition} is read from a position no later reply can precede;
   * exceptionally when the router stopped on an error.
   */
  public CompletableFuture<Void> watch(int partition) {
    TopicPartition tp = new TopicPartition(topic, partition);
    Reader reader = readers.get(partition % readers.size());
    if (reader.assigned.contains(tp)) {
      return CompletableFuture.completedFuture(null);
    }
    RuntimeException failed = reader.failure;
    if (failed != null) {
      return CompletableFuture.failedFuture(failed);
    }
    Watch watch = new Watch(tp, new CompletableFuture<>());
    reader.watches.add(watch); // picked up within one poll (at most 100 ms)
    return watch.ready();
  }

  /** Hands {@code key}'s replies to {@code listener} until the returned action runs. */
  public Runnable listen(String key, Listener listener) {
    listeners.computeIfAbsent(key, k -> new CopyOnWriteArraySet<>()).add(listener);
    return () ->
        listeners.computeIfPresent(
            key,
            (k, set) -> {
              set.remove(listener);
              return set.isEmpty() ? null : set;
            });
  }

  /** True once every partition is positioned ({@link #everyPartition}) and no reader failed. */
  public boolean ready() {
    return readers.stream().allMatch(r -> r.positioned) && failure() == null;
  }

  /** Why a reader stopped, when one did: waiting calls get no more replies. */
  public RuntimeException failure() {
    return readers.stream().map(r -> r.failure).filter(f -> f != null).findFirst().orElse(null);
  }

  /** How many listeners wait, over every key. */
  public int waiting() {
    return listeners.values().stream().mapToInt(Set::size).sum();
  }

  /** One consumer on its own thread, for the partitions whose number is its index modulo all. */
  private final class Reader implements Runnable {
    final KafkaConsumer<String, ToolResult> consumer;
    final int index;
    final int of;
    final boolean every;
    final Thread thread;
    final LinkedBlockingQueue<Watch> watches = new LinkedBlockingQueue<>();
    final Set<TopicPartition> assigned = ConcurrentHashMap.newKeySet();
    volatile boolean running = true;
    volatile boolean positioned;
    volatile RuntimeException failure;

    Reader(
        Properties kafka,
        Deserializer<ToolResult> values,
        int index,
        int of,
        boolean every,
        String name) {
      Properties props = new Properties();
      props.putAll(kafka);
      props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
      props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
      props.remove(ConsumerConfig.GROUP_ID_CONFIG);
      this.consumer = new KafkaConsumer<>(props, new StringDeserializer(), values);
      this.index = index;
      this.of = of;
      this.every = every;
      this.positioned = !every; // on demand: each watch says when its partition is positioned
      this.thread = new Thread(this, name);
      this.thread.setDaemon(true);
    }

    @Override
    public void run() {
      try {
        if (every) {
          List<TopicPartition> mine = myPartitions();
          if (mine.isEmpty()) {
            positioned = true; // more readers than partitions: nothing to read
            return;
          }
          assign(mine);
          positioned = true;
        }
        while (running) {
          if (assigned.isEmpty()) {
            Watch first = watches.poll(100, TimeUnit.MILLISECONDS);
            if (first != null) {
              assignWatched(List.of(first));
            }
            continue;
          }
          List<Watch> pending = new ArrayList<>();
          watches.drainTo(pending);
          assignWatched(pending);
          poll();
        }
      } catch (WakeupException | InterruptedException e) {
        // closing
      } catch (RuntimeException e) {
        if (running) {
          failure = e;
          log.error(
              "The reply consumer stopped on {}; waiting calls get no more replies. Restart the"
                  + " process (a client: create it again).",
              topic,
              e);
        }
      } finally {
        List<Watch> left = new ArrayList<>();
        watches.drainTo(left);
        RuntimeException why =
            failure != null ? failure : new IllegalStateException("the reply router closed");
        left.forEach(w -> w.ready().completeExceptionally(why));
        consumer.close(CloseOptions.timeout(Duration.ZERO));
      }
    }

    private List<TopicPartition> myPartitions() {
      List<TopicPartition> partitions = List.of();
      while (running && partitions.isEmpty()) {
        partitions =
            consumer.partitionsFor(topic, Duration.ofSeconds(5)).stream()
                .map(p -> new TopicPartition(p.topic(), p.partition()))
                .toList();
      }
      return partitions.stream().filter(p -> p.partition() % of == index).toList();
    }

    private void poll() {
      try {
        for (ConsumerRecord<String, ToolResult> record : consumer.poll(Duration.ofMillis(100))) {
          deliver(record);
        }
      } catch (RecordDeserializationException e) {
        log.warn(
            "Skipping a record on {} at offset {} that is not a reply: {}",
            e.topicPartition(),
            e.offset(),
            e.getMessage());
        consumer.seek(e.topicPartition(), e.offset() + 1);
      }
    }

    private void assignWatched(List<Watch> pending) {
      if (pending.isEmpty()) {
        return;
      }
      assign(pending.stream().map(Watch::partition).toList());
      pending.forEach(w -> w.ready().complete(null));
    }

    /** Adds {@code partitions} at their end, resolved now: before any intent is published. */
    private void assign(List<TopicPartition> partitions) {
      Set<TopicPartition> added = new HashSet<>(partitions);
      added.removeAll(assigned);
      if (added.isEmpty()) {
        return;
      }
      Set<TopicPartition> all = new HashSet<>(assigned);
      all.addAll(added);
      consumer.assign(all);
      consumer.seekToEnd(added);
      added.forEach(consumer::position);
      assigned.addAll(added);
    }

    void stop() {
      running = false;
      consumer.wakeup();
    }
  }

  private void deliver(ConsumerRecord<String, ToolResult> record) {
    if (record.key() == null || record.value() == null) {
      return;
    }
    Set<Listener> waiting = listeners.get(record.key());
    if (waiting == null) {
      return;
    }
    Header header = record.headers().lastHeader(Topics.REQUEST_ID_HEADER);
    String requestId = header == null ? null : new String(header.value(), StandardCharsets.UTF_8);
    Long through = PendingReply.through(record.headers());
    for (Listener listener : waiting) {
      try {
        listener.onReply(record.value(), requestId, through);
      } catch (RuntimeException e) {
        log.warn("A waiting call failed on its reply for key {}", record.key(), e);
      }
    }
  }

  @Override
  public void close() {
    readers.forEach(Reader::stop);
    for (Reader r : readers) {
      try {
        r.thread.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
