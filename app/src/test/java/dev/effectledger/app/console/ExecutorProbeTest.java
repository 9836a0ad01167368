package dev.effectledger.app.console;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ExecutorProbeTest {

  @Test
  void shouldSumTheThreeSeriesOverTheirLabelsAndSkipWhatIsNotASample() {
    String metrics =
        """
        # HELP effectledger_executor_effects_total Effects performed
        # TYPE effectledger_executor_effects_total counter
        effectledger_executor_effects_total{lane="payments",outcome="succeeded"} 40.0
        effectledger_executor_effects_total{lane="payments",outcome="failed"} 2.0
        effectledger_executor_in_flight{lane="payments"} 3.0
        effectledger_executor_retries_total{lane="payments"} 5.0
        jvm_threads_live_threads 42.0
        effectledger_executor_retries_total{lane="odd"} NaNx

        """;

    assertThat(ExecutorProbe.totals(metrics)).isEqualTo(new ExecutorProbe.Totals(42, 3, 5));
  }
}
