package dev.effectledger.client.internal;

import dev.effectledger.client.PendingReply;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.Deserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One consumer, on a thread of its own, for every pending call: it reads only the partitions asked
 * for, read_committed, each from its end when first asked, and completes the calls waiting on each
 * reply's key. In-flight notices (IN_FLIGHT, DUPLICATE_IN_FLIGHT) complete nothing, and a release's
 * reply only the calls whose intent the ledger had read before it ({@link PendingReply}).
 */
public final class ReplyListener implements AutoCloseable {

  private static final Logger log = LoggerFactory.getLogger(ReplyListener.class);

  private record Watch(TopicPartition partition, CompletableFuture<Void> ready) {}

  private final KafkaConsumer<String, ToolResult> consumer;
  private final String topic;
  private final Map<String, List<PendingReply>> waiting = new ConcurrentHashMap<>();
  private final LinkedBlockingQueue<Watch> watches = new LinkedBlockingQueue<>();
  private final Set<TopicPartition> assigned = ConcurrentHashMap.newKeySet();
  private final Thread thread;
  private volatile boolean running = true;

  public ReplyListener(Properties settings, String topic, Deserializer<ToolResult> values) {
    Properties props = new Properties();
    props.putAll(settings);
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    props.remove(ConsumerConfig.GROUP_ID_CONFIG);
    this.consumer = new KafkaConsumer<>(props, new StringDeserializer(), values);
    this.topic = topic;
    this.thread = new Thread(this::run, "tool-call-replies");
    this.thread.setDaemon(true);
    this.thread.start();
  }

  /**
   * A call on {@code key}, completed by the next final reply that answers it (see {@link
   * PendingReply}); tell it its intent's offset once the broker took the intent.
   */
  public PendingReply await(String key) {
    PendingReply call = new PendingReply();
    waiting.computeIfAbsent(key, k -> new CopyOnWriteArrayList<>()).add(call);
    return call;
  }

  public void forget(String key, PendingReply call) {
    waiting.computeIfPresent(
        key,
        (k, list) -> {
          list.remove(call);
          return list.isEmpty() ? null : list;
        });
  }

  /** Completes once the partition is read from a position no later reply can precede. */
  public CompletableFuture<Void> watch(int partition) {
    TopicPartition tp = new TopicPartition(topic, partition);
    if (assigned.contains(tp)) {
      return CompletableFuture.completedFuture(null);
    }
    Watch watch = new Watch(tp, new CompletableFuture<>());
    watches.add(watch); // picked up within one poll (at most 100 ms)
    return watch.ready();
  }

  private void run() {
    try {
      while (running) {
        if (assigned.isEmpty()) {
          Watch first = watches.poll(100, TimeUnit.MILLISECONDS);
          if (first != null) {
            assign(List.of(first));
          }
          continue;
        }
        assign(drainWatches());
        for (ConsumerRecord<String, ToolResult> record : consumer.poll(Duration.ofMillis(100))) {
          deliver(record.key(), record.value(), PendingReply.through(record.headers()));
        }
      }
    } catch (WakeupException | InterruptedException e) {
      // closing
    } catch (RuntimeException e) {
      log.error("The reply listener stopped; pending calls will time out. Recreate the client.", e);
      watches.forEach(w -> w.ready().completeExceptionally(e));
    } finally {
      consumer.close(CloseOptions.timeout(Duration.ZERO));
    }
  }

  private List<Watch> drainWatches() {
    List<Watch> pending = new ArrayList<>();
    watches.drainTo(pending);
    return pending;
  }

  private void assign(List<Watch> pending) {
    if (pending.isEmpty()) {
      return;
    }
    Set<TopicPartition> added = new HashSet<>();
    for (Watch w : pending) {
      if (!assigned.contains(w.partition())) {
        added.add(w.partition());
      }
    }
    if (!added.isEmpty()) {
      Set<TopicPartition> all = new HashSet<>(assigned);
      all.addAll(added);
      consumer.assign(all);
      consumer.seekToEnd(added);
      added.forEach(consumer::position); // resolve the end now, before any intent is published
      assigned.addAll(added);
    }
    pending.forEach(w -> w.ready().complete(null));
  }

  private void deliver(String key, ToolResult result, Long through) {
    if (key == null || result == null || isInFlightNotice(result)) {
      return;
    }
    List<PendingReply> calls = waiting.get(key);
    if (calls != null) {
      for (PendingReply call : calls) {
        if (call.offer(result, through)) {
          forget(key, call);
        }
      }
    }
  }

  private static boolean isInFlightNotice(ToolResult result) {
    return result.getStatus() == ResultStatus.IN_FLIGHT
        || result.getStatus() == ResultStatus.REJECTED
            && result.getError() != null
            && ErrorCode.DUPLICATE_IN_FLIGHT.name().equals(result.getError().getCode());
  }

  @Override
  public void close() {
    running = false;
    consumer.wakeup();
    try {
      thread.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
