package dev.effectledger.connectors.executor.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.connectors.executor.ExecutorConfig;
import dev.effectledger.testkit.FakeClock;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * The poll loop's pacing decisions over a fake clock, a MockConsumer and a MockProducer: no broker.
 * Commit interval 100 ms, minimum commit interval 10 ms, backlog 4.
 */
class CommitPacerTest {

  private static final TopicPartition P0 = new TopicPartition("tool-dispatch.payments", 0);
  private static final TopicPartition P1 = new TopicPartition("tool-dispatch.payments", 1);
  private static final ExecutorConfig EARLY =
      ExecutorConfig.of(new Properties(), List.of("payments"), "mock://x")
          .withCommitInterval(Duration.ofMillis(100))
          .withMinCommitInterval(Duration.ofMillis(10));

  private final FakeClock clock = new FakeClock(Instant.parse("2025-01-01T00:00:00Z"));
  private final OffsetTracker tracker = new OffsetTracker();
  private final OutcomeTransactions transactions =
      new OutcomeTransactions(
          new MockProducer<>(true, null, new ByteArraySerializer(), new ByteArraySerializer()),
          tracker,
          null);
  private final LinkedBlockingQueue<Finished> finished = new LinkedBlockingQueue<>();
  private final MockConsumer<byte[], byte[]> consumer = new MockConsumer<>("earliest");

  private CommitPacer pacer(ExecutorConfig config) {
    return new CommitPacer(config, clock, tracker, transactions, finished, consumer, 4);
  }

  private final CommitPacer pacer = pacer(EARLY);

  private Finished done(long offset) {
    return Finished.unjournalled(
        P0,
        offset,
        0,
        List.of(
            new ProducerRecord<>(
                "tool-outcomes", ("k" + offset).getBytes(StandardCharsets.UTF_8), new byte[] {1})));
  }

  /** An effect read, finished, and staged for the next transaction. */
  private void staged(long offset) {
    tracker.started(P0, offset);
    tracker.finished(P0, offset);
    transactions.add(done(offset));
  }

  private void advance(long millis) {
    clock.advance(Duration.ofMillis(millis));
  }

  @Test
  void shouldBeDueBeforeTheFirstCommit() {
    assertThat(pacer.commitDue()).isTrue();
  }

  @Test
  void shouldCommitOnTheIntervalWhileEffectsStillRun() {
    staged(0);
    tracker.started(P0, 1);
    pacer.committing();

    advance(99);
    assertThat(pacer.commitDue()).isFalse();

    advance(1);
    assertThat(pacer.commitDue()).isTrue();
  }

  @Test
  void shouldCommitAFinishedBurstOnceTheMinimumIntervalIsUp() {
    pacer.committing();
    staged(0);

    advance(9);
    assertThat(pacer.commitDue()).isFalse();

    advance(1);
    assertThat(pacer.commitDue()).isTrue();
  }

  @Test
  void shouldNotCommitEarlyWithNothingToPublish() {
    pacer.committing();

    advance(50);
    assertThat(pacer.commitDue()).isFalse();

    advance(50);
    assertThat(pacer.commitDue()).isTrue();
  }

  @Test
  void shouldCommitOnlyOnTheIntervalWhenTheMinimumIsNotShorter() {
    CommitPacer onInterval = pacer(EARLY.withMinCommitInterval(Duration.ofMillis(100)));
    onInterval.committing();
    staged(0);

    advance(50);
    assertThat(onInterval.commitDue()).isFalse();

    advance(50);
    assertThat(onInterval.commitDue()).isTrue();
  }

  @Test
  void shouldBlockUpToTheIdleWaitWhenNothingRunsOrWaits() {
    pacer.committing();

    assertThat(pacer.nextWait()).isEqualTo(CommitPacer.IDLE_WAIT).isEqualTo(Duration.ofMillis(50));
  }

  @Test
  void shouldBlockOnlyUntilTheIntervalIsUpWhileEffectsRun() {
    tracker.started(P0, 0);
    pacer.committing();

    advance(70);
    assertThat(pacer.nextWait()).isEqualTo(Duration.ofMillis(30));

    advance(40);
    assertThat(pacer.nextWait()).isEqualTo(Duration.ofMillis(1));
  }

  @Test
  void shouldBlockOnlyUntilTheMinimumIntervalIsUpWhenFinishedWorkWaitsAndNothingRuns() {
    pacer.committing();
    finished.add(done(0));

    assertThat(pacer.nextWait()).isEqualTo(Duration.ofMillis(10));

    advance(4);
    assertThat(pacer.nextWait()).isEqualTo(Duration.ofMillis(6));
  }

  @Test
  void shouldWaitForRunningEffectsBrieflyAndNeverPastTheInterval() {
    pacer.committing();

    assertThat(pacer.effectsWait()).isEqualTo(CommitPacer.EFFECTS_WAIT);

    advance(99);
    assertThat(pacer.effectsWait()).isEqualTo(Duration.ofMillis(1));

    advance(50);
    assertThat(pacer.effectsWait()).isEqualTo(Duration.ofMillis(1));
  }

  @Test
  void shouldPauseTheAssignmentAtTheBacklogAndResumeBelowIt() {
    consumer.assign(List.of(P0, P1));
    for (long offset = 0; offset < 3; offset++) {
      tracker.started(P0, offset);
    }

    pacer.applyBackpressure();
    assertThat(pacer.paused()).isFalse();
    assertThat(consumer.paused()).isEmpty();

    tracker.started(P0, 3);
    pacer.applyBackpressure();
    assertThat(pacer.paused()).isTrue();
    assertThat(consumer.paused()).containsExactlyInAnyOrder(P0, P1);

    tracker.finished(P0, 0);
    pacer.applyBackpressure();
    assertThat(pacer.paused()).isFalse();
    assertThat(consumer.paused()).isEmpty();
  }

  @Test
  void shouldPauseANewAssignmentAgainOnceThePauseIsForgotten() {
    consumer.assign(List.of(P0));
    for (long offset = 0; offset < 4; offset++) {
      tracker.started(P0, offset);
    }
    pacer.applyBackpressure();
    assertThat(consumer.paused()).containsExactly(P0);

    consumer.assign(List.of(P1));
    pacer.forgetPause();
    assertThat(pacer.paused()).isFalse();

    pacer.applyBackpressure();
    assertThat(pacer.paused()).isTrue();
    // (MockConsumer keeps P0 in its paused set after the reassignment)
    assertThat(consumer.paused()).contains(P1);
  }
}
