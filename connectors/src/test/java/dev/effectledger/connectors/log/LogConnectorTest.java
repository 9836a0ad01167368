package dev.effectledger.connectors.log;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.testkit.FakeClock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LogConnectorTest {

  @TempDir Path dir;

  @Test
  void shouldAppendOneJsonLinePerEffectAndDeclareNoGuarantee() throws Exception {
    Path file = dir.resolve("effects.jsonl");
    var connector = new LogConnector(file, new FakeClock(Instant.parse("2026-01-01T00:00:00Z")));

    connector.execute(new EffectRequest("k1", "k1", "acme", "note", "{\"text\":\"hi\"}", 1, null));
    connector.execute(new EffectRequest("k1", "k1", "acme", "note", "{\"text\":\"hi\"}", 1, null));

    assertThat(Files.readAllLines(file))
        .hasSize(2)
        .first()
        .isEqualTo(
            "{\"key\":\"k1\",\"tenant\":\"acme\",\"tool\":\"note\",\"at\":\"2026-01-01T00:00:00Z\",\"arguments\":{\"text\":\"hi\"}}");
    assertThat(connector.capabilities().safeToRepeat()).isFalse();
  }

  @Test
  void shouldReportUnwritableFileAsRetryable() {
    var connector = new LogConnector(dir.resolve("missing-dir/effects.jsonl"), Clock.systemUTC());

    assertThat(connector.execute(new EffectRequest("k1", "k1", "acme", "note", "{}", 1, null)))
        .isInstanceOfSatisfying(
            EffectOutcome.Retryable.class, r -> assertThat(r.code()).isEqualTo("LOG_WRITE_FAILED"));
  }
}
