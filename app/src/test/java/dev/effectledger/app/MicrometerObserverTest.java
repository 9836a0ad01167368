package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.schema.AuditType;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.Set;
import org.junit.jupiter.api.Test;

class MicrometerObserverTest {

  @Test
  void shouldCountDoubleEffectsPerToolApartFromDecisions() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    MicrometerObserver observer = new MicrometerObserver(registry, Set.of("charge_card"));

    observer.decided("charge_card", AuditType.LATE_OUTCOME);
    observer.doubleEffect("charge_card");
    observer.doubleEffect("charge_card");

    assertThat(registry.scrape())
        .contains("effectledger_double_effects_total{tool=\"charge_card\"} 2.0")
        .contains(
            "effectledger_decisions_total{decision=\"late_outcome\",tool=\"charge_card\"} 1.0");
  }

  @Test
  void shouldCountToolsTheFileDoesNotNameUnderOneLabel() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    MicrometerObserver observer = new MicrometerObserver(registry, Set.of("charge_card"));

    for (int i = 0; i < 50; i++) {
      observer.decided("made-up-tool-" + i, AuditType.REJECTED);
    }
    observer.decided("", AuditType.REJECTED);

    assertThat(registry.scrape())
        .contains("effectledger_decisions_total{decision=\"rejected\",tool=\"other\"} 51.0")
        .doesNotContain("made-up-tool");
  }
}
