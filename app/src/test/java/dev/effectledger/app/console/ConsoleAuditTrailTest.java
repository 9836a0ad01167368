package dev.effectledger.app.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.LedgerState;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;
import org.junit.jupiter.api.Test;

class ConsoleAuditTrailTest {

  private static AuditEvent.Builder event() {
    return AuditEvent.newBuilder()
        .setIdempotencyKey("v1:k1")
        .setTenant("acme")
        .setTool("charge_card")
        .setType(AuditType.COMPLETED)
        .setAttempt(2)
        .setAt(Instant.parse("2026-01-02T03:04:05Z"));
  }

  @Test
  void shouldShowEveryFieldOfAnEventInItsRow() {
    AuditEvent full =
        event()
            .setState(LedgerState.SUCCEEDED)
            .setCode("OPERATOR_RELEASED")
            .setEffectId("ch_9")
            .setActor("alice")
            .build();

    assertThat(ConsoleAuditTrail.rowOf(full))
        .containsExactly(
            Map.entry("at", "2026-01-02T03:04:05Z"),
            Map.entry("type", "COMPLETED"),
            Map.entry("state", "SUCCEEDED"),
            Map.entry("attempt", "2"),
            Map.entry("code", "OPERATOR_RELEASED"),
            Map.entry("effectId", "ch_9"),
            Map.entry("actor", "alice"));
  }

  @Test
  void shouldShowAbsentFieldsAsEmpty() {
    assertThat(ConsoleAuditTrail.rowOf(event().build()))
        .containsEntry("state", "")
        .containsEntry("code", "")
        .containsEntry("effectId", "")
        .containsEntry("actor", "");
  }

  @Test
  void shouldReadThePartitionTheLedgerKeyedTheEventsTo() {
    for (String key : new String[] {"v1:k1", "v1:order-42", "ключ"}) {
      for (int partitions : new int[] {1, 6, 12}) {
        assertThat(ConsoleAuditTrail.partitionOf(key, partitions))
            .as("%s of %d", key, partitions)
            .isEqualTo(
                BuiltInPartitioner.partitionForKey(
                    key.getBytes(StandardCharsets.UTF_8), partitions));
      }
    }
  }
}
