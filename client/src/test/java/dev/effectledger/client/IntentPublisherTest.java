package dev.effectledger.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.schema.ToolIntent;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.junit.jupiter.api.Test;

class IntentPublisherTest {

  private static final ToolCall CALL =
      ToolCall.of(
              new StepContext("acme", "run-1", "pay", "customer:42"),
              "charge_card",
              "{\"amount\":1}")
          .withBypass("approval-7")
          .withTraceId("trace-9");

  @Test
  void shouldCarryTheCallTheKeyAndTheReplyTopicInTheIntent() {
    DerivedKey key = new DerivedKey("key-1", "{\"amount\":1}", "hash-1");
    Instant at = Instant.parse("2026-01-02T03:04:05Z");

    ToolIntent intent = IntentPublisher.intentOf(CALL, key, "tool-results.agent-a", at);

    assertThat(intent.getIdempotencyKey()).isEqualTo("key-1");
    assertThat(intent.getTenant()).isEqualTo("acme");
    assertThat(intent.getRunId()).isEqualTo("run-1");
    assertThat(intent.getStepId()).isEqualTo("pay");
    assertThat(intent.getBusinessScope()).isEqualTo("customer:42");
    assertThat(intent.getTool()).isEqualTo("charge_card");
    assertThat(intent.getArguments()).isEqualTo("{\"amount\":1}");
    assertThat(intent.getArgumentsHash()).isEqualTo("hash-1");
    assertThat(intent.getRequestedAt()).isEqualTo(at);
    assertThat(intent.getReplyTopic()).isEqualTo("tool-results.agent-a");
    assertThat(intent.getBypassApproval()).isEqualTo("approval-7");
    assertThat(intent.getTraceId()).isEqualTo("trace-9");
  }

  @Test
  void shouldPickThePartitionKafkasDefaultPartitionerPutsTheReplyOn() {
    for (String key : new String[] {"key-1", "acme:run-1:pay", "", "ключ-∑"}) {
      for (int partitions : new int[] {1, 3, 12}) {
        assertThat(IntentPublisher.partitionOf(key, partitions))
            .as("%s of %d", key, partitions)
            .isEqualTo(
                BuiltInPartitioner.partitionForKey(
                    key.getBytes(StandardCharsets.UTF_8), partitions));
      }
    }
  }
}
