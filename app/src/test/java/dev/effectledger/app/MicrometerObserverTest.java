package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.app.console.HttpAuth;
import dev.effectledger.schema.AuditType;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
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

  @Test
  void shouldGiveAToolAddedByALaterPolicyVersionASeriesOfItsOwn() {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    AtomicReference<Set<String>> newest = new AtomicReference<>(Set.of("charge_card"));
    MicrometerObserver observer = new MicrometerObserver(registry, newest::get);

    observer.decided("refund", AuditType.DISPATCHED); // before `tools apply` names it
    newest.set(Set.of("charge_card", "refund")); // applied
    observer.decided("refund", AuditType.DISPATCHED);
    newest.set(Set.of("charge_card")); // dropped again: the series stays
    observer.decided("refund", AuditType.DISPATCHED);

    assertThat(registry.scrape())
        .contains("effectledger_decisions_total{decision=\"dispatched\",tool=\"other\"} 1.0")
        .contains("effectledger_decisions_total{decision=\"dispatched\",tool=\"refund\"} 2.0");
  }

  @Test
  void shouldNameTheLatestKeysThatActedTwiceOnTheOverviewTheConsoleDraws() throws Exception {
    PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    MicrometerObserver observer = new MicrometerObserver(registry, Set.of("charge_card"));
    for (int i = 0; i < MicrometerObserver.DOUBLE_EFFECTS_KEPT + 5; i++) {
      observer.doubleEffect("charge_card", "acme", "k" + i, "ch_" + i, "ch_x" + i);
    }

    assertThat(observer.doubleEffects())
        .hasSize(MicrometerObserver.DOUBLE_EFFECTS_KEPT)
        .first()
        .satisfies(d -> assertThat(d.key()).as("the oldest dropped first").isEqualTo("k5"));
    assertThat(registry.scrape())
        .contains(
            "effectledger_double_effects_total{tool=\"charge_card\"} "
                + (MicrometerObserver.DOUBLE_EFFECTS_KEPT + 5)
                + ".0");
    LedgerHttpServer http = new LedgerHttpServer("127.0.0.1", 0, registry, HttpAuth.OPEN, false);
    try {
      http.doubleEffects(observer::doubleEffects);
      var overview = http.overview(null, true);
      assertThat(overview.path("doubleEffects")).hasSize(MicrometerObserver.DOUBLE_EFFECTS_KEPT);
      var last = overview.path("doubleEffects").get(MicrometerObserver.DOUBLE_EFFECTS_KEPT - 1);
      assertThat(last.path("key").asText())
          .isEqualTo("k" + (MicrometerObserver.DOUBLE_EFFECTS_KEPT + 4));
      assertThat(last.path("tenant").asText()).isEqualTo("acme");
      assertThat(last.path("secondEffectId").asText())
          .isEqualTo("ch_x" + (MicrometerObserver.DOUBLE_EFFECTS_KEPT + 4));
    } finally {
      http.close();
    }
  }
}
