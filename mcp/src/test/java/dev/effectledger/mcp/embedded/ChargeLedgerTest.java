package dev.effectledger.mcp.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ChargeLedgerTest {

  @Test
  void shouldCountEffectsPerKeyAndKeepTheFirstCharge() {
    ChargeLedger ledger = new ChargeLedger(null);
    ledger.effect("k1", Map.of("id", "ch_1"));
    ledger.effect("k1", Map.of("id", "ch_2"));
    ledger.effect("k2", Map.of("id", "ch_3"));

    assertThat(ledger.effects("k1")).isEqualTo(2);
    assertThat(ledger.effects("nope")).isZero();
    assertThat(ledger.effectCount()).isEqualTo(3);
    assertThat(ledger.charge("k1")).containsEntry("id", "ch_1");
    assertThat(ledger.chargedKeys()).containsExactlyInAnyOrder("k1", "k2");
  }

  @Test
  void shouldHandAnInjectedFaultOutOnce() {
    ChargeLedger ledger = new ChargeLedger(null);
    ledger.inject("k", CountingMcpServer.Fault.SLOW);

    assertThat(ledger.takeFault("k")).isEqualTo(CountingMcpServer.Fault.SLOW);
    assertThat(ledger.takeFault("k")).isNull();
  }

  @Test
  void shouldAppendOneLinePerEffectToItsFile(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("effects");
    ChargeLedger ledger = new ChargeLedger(file);
    ledger.effect("a", Map.of());
    ledger.effect("a", Map.of());
    ledger.countRequest("b");

    assertThat(Files.readAllLines(file)).containsExactly("a", "a");
    assertThat(ledger.requests("b")).isEqualTo(1);
    assertThat(ledger.nextId()).isEqualTo("ch_1");
  }
}
