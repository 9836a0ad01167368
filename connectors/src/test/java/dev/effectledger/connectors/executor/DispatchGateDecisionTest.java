package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.schema.Dispatch;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** What a dispatch read on a journalled lane does, as the journal has it. */
class DispatchGateDecisionTest {

  private static final TopicPartition P = new TopicPartition("tool-dispatch.payments", 0);
  private static final TopicPartition J = AttemptJournal.journalPartition(P);

  private final AttemptJournal journal = new AttemptJournal("executor-1");

  @BeforeEach
  void assign() {
    journal.assigned(P);
  }

  private void read(String key, String value) {
    journal.apply(J, key.getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8));
  }

  private static Dispatch dispatch(int attempt, long life) {
    return Dispatch.newBuilder()
        .setIdempotencyKey("k")
        .setEffectKey("k")
        .setTenant("acme")
        .setRunId("run")
        .setStepId("step")
        .setTool("pay")
        .setLane("payments")
        .setArguments("{}")
        .setAttempt(attempt)
        .setDispatchedAt(Instant.EPOCH)
        .setIncarnation(life)
        .build();
  }

  @Test
  void shouldNeverStartADispatchOfAFencedLife() {
    read(AttemptJournal.fenceKey("k", 40), AttemptJournal.fenceValue(9, "reconciler"));

    assertThat(DispatchGate.decide(journal, P, dispatch(1, 40), 9))
        .isEqualTo(DispatchGate.Decision.SUPERSEDED);
    assertThat(DispatchGate.decide(journal, P, dispatch(1, 41), 10))
        .as("the key's next life runs")
        .isEqualTo(DispatchGate.Decision.RUN);
  }

  /**
   * A start before the fence keeps the release waiting until its marker is answered: answering its
   * redelivery SUPERSEDED without a lookup would leave the marker started, and the key held, for
   * good.
   */
  @Test
  void shouldAnswerAStartOfAFencedLifeFromALookupSoThatItsMarkerIsAnswered() {
    read(AttemptJournal.marker("k", 1, 40L), "started 9 executor-0");
    read(AttemptJournal.fenceKey("k", 40), AttemptJournal.fenceValue(9, "reconciler"));

    assertThat(DispatchGate.decide(journal, P, dispatch(1, 40), 9))
        .isEqualTo(DispatchGate.Decision.STARTED_BEFORE);
  }
}
