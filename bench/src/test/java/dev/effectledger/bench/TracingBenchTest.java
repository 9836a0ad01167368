package dev.effectledger.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.bench.Bench.Run;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class TracingBenchTest {

  private static Run run(double perSecond) {
    return new Run("ledger", "exactly_once_v2", perSecond, perSecond, 0, 0, 0);
  }

  @Test
  void shouldReportEachModeOverTracingOffOfTheSameRoundAndTheirMedians() {
    Map<String, List<Run>> runs = new LinkedHashMap<>();
    runs.put("off", List.of(run(100), run(200), run(100)));
    runs.put("1%", List.of(run(99), run(180), run(97)));
    runs.put("100%", List.of(run(80), run(170), run(90)));
    Map<String, long[]> exported = new LinkedHashMap<>();
    exported.put("off", new long[] {0, 0});
    exported.put("1%", new long[] {3, 2_000_000});
    exported.put("100%", new long[] {40, 50_000_000});

    String md = TracingBench.report(runs, exported, 1000, 750, "bench/run throughput --tracing");

    assertThat(md)
        .contains("| 1 | 100 | 99 | 80 | 0.990 | 0.800 |")
        .contains("| 2 | 200 | 180 | 170 | 0.900 | 0.850 |")
        .contains("1% sampling 0.970 of tracing off's throughput (a cost of 3.0%")
        .contains("100% sampling 0.850 (15.0%)")
        .contains("Tracing 1%: 3 OTLP export requests, 2.0 MB");
    assertThat(LatencyReport.median(List.of(3.0, 1.0, 2.0, 4.0))).isEqualTo(2.5);
  }

  private static LatencyBench.Point point(double p50, double p99) {
    return new LatencyBench.Point(
        100,
        100,
        500,
        "ledger",
        5000,
        5000,
        p50,
        p99,
        p99,
        List.of(),
        new double[0],
        null,
        0,
        null);
  }

  @Test
  void shouldReportEachModesP99OverTracingOffsOfTheSameRound() {
    Map<String, List<LatencyBench.Point>> points = new LinkedHashMap<>();
    points.put("off", List.of(point(50, 100), point(50, 200)));
    points.put("1%", List.of(point(51, 102), point(52, 196)));
    points.put("100%", List.of(point(60, 120), point(61, 240)));

    String md = TracingBench.latencyReport(points, 500, 10, "bench/run latency --tracing");

    assertThat(md)
        .contains("| 1 | 1% | 51.0 | 102.0 | 1.02 |")
        .contains("| 2 | 100% | 61.0 | 240.0 | 1.20 |")
        .contains("Tracing 1%: p99 over tracing off's, median of 2 rounds: 1.00")
        .contains("Tracing 100%: p99 over tracing off's, median of 2 rounds: 1.20");
  }
}
