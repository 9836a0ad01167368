package dev.effectledger.connectors.executor.internal;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRecord;
import dev.effectledger.schema.DeadLetters;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.Topics;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;

/** Where a result stops fitting in an outcome, and what replaces it: no broker. */
class ResultBoundTest {

  private static final Dispatch DISPATCH =
      Dispatch.newBuilder()
          .setIdempotencyKey("k1")
          .setEffectKey("k1")
          .setTenant("acme")
          .setRunId("run-1")
          .setStepId("step-1")
          .setTool("charge")
          .setLane("payments")
          .setArguments("{}")
          .setAttempt(1)
          .setDispatchedAt(Instant.parse("2025-01-01T00:00:00Z"))
          .build();

  /** A JSON string result of exactly {@code bytes} bytes. */
  private static String resultOf(int bytes) {
    return "\"" + "x".repeat(bytes - 2) + "\"";
  }

  private final List<ProducerRecord<byte[], byte[]>> records = new ArrayList<>();

  @Test
  void aResultOfExactlyTheLimitIsKeptAsItIs() {
    EffectOutcome outcome =
        new EffectOutcome.Succeeded(resultOf(EffectPerformer.MAX_RESULT_BYTES), "ch_1", List.of());

    assertThat(ResultBound.boundResult(DISPATCH, outcome, records)).isSameAs(outcome);
    assertThat(records).isEmpty();
  }

  @Test
  void aResultOneByteOverTheLimitIsReplacedByAMarkerAndDeadLetteredUnderTheKey() {
    String big = resultOf(EffectPerformer.MAX_RESULT_BYTES + 1);
    EffectRecord own = new EffectRecord("charges", new byte[] {1}, new byte[] {2});

    EffectOutcome bounded =
        ResultBound.boundResult(
            DISPATCH, new EffectOutcome.Succeeded(big, "ch_1", List.of(own)), records);

    assertThat(bounded)
        .isEqualTo(
            new EffectOutcome.Succeeded(
                "{\"effectledger\":\"RESULT_TOO_LARGE\",\"bytes\":"
                    + (EffectPerformer.MAX_RESULT_BYTES + 1)
                    + ",\"sha256\":\""
                    + DeadLetters.sha256(big.getBytes(StandardCharsets.UTF_8))
                    + "\"}",
                "ch_1",
                List.of(own)));
    assertThat(records).hasSize(1);
    ProducerRecord<byte[], byte[]> letter = records.get(0);
    assertThat(letter.topic()).isEqualTo(Topics.DISPATCH_DLQ);
    assertThat(new String(letter.key(), StandardCharsets.UTF_8)).isEqualTo("k1");
    assertThat(new String(letter.headers().lastHeader(DeadLetters.CODE).value()))
        .isEqualTo("RESULT_TOO_LARGE");
  }

  @Test
  void onlySucceededOutcomesCarryAResult() {
    EffectOutcome ambiguous =
        new EffectOutcome.Ambiguous("TIMEOUT", "x".repeat(EffectPerformer.MAX_RESULT_BYTES * 2));

    assertThat(ResultBound.boundResult(DISPATCH, ambiguous, records)).isSameAs(ambiguous);
    assertThat(records).isEmpty();
  }
}
