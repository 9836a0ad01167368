package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.connectors.executor.internal.OffsetTracker;
import java.util.List;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

class OffsetTrackerTest {

  private final TopicPartition p0 = new TopicPartition("tool-dispatch.payments", 0);
  private final TopicPartition p1 = new TopicPartition("tool-dispatch.payments", 1);
  private final OffsetTracker tracker = new OffsetTracker();

  @Test
  void shouldCommitOnlyUpToTheFirstUnfinishedOffset() {
    tracker.started(p0, 10);
    tracker.started(p0, 11);
    tracker.started(p0, 12);
    tracker.finished(p0, 11);
    tracker.finished(p0, 12);

    assertThat(tracker.committable()).isEmpty();

    tracker.finished(p0, 10);
    assertThat(tracker.committable()).containsEntry(p0, new OffsetAndMetadata(13));
  }

  @Test
  void shouldOfferOnlyPartitionsWhoseWatermarkMoved() {
    tracker.started(p0, 0);
    tracker.started(p1, 0);
    tracker.finished(p0, 0);
    tracker.finished(p1, 0);
    tracker.committed(tracker.committable());

    tracker.started(p1, 1);
    tracker.finished(p1, 1);

    assertThat(tracker.committable()).containsOnlyKeys(p1);
  }

  @Test
  void shouldForgetRevokedPartitions() {
    tracker.started(p0, 0);
    tracker.started(p1, 0);
    tracker.forget(List.of(p0));

    assertThat(tracker.pending()).isEqualTo(1);
    assertThat(tracker.finished(p0, 0)).isFalse();
  }
}
