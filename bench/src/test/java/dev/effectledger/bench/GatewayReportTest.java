package dev.effectledger.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import dev.effectledger.bench.GatewayBench.Side;
import dev.effectledger.bench.GatewayBench.Tally;
import dev.effectledger.bench.GatewayBench.Waiting;
import java.util.List;
import org.junit.jupiter.api.Test;

class GatewayReportTest {

  @Test
  void shouldRateEachGatewaysP99AgainstTheClientsAloneAndAtOnce() {
    List<Side> alone = List.of(side(JAVA, 100), side(HTTP_1_1, 110), side(HTTP_2, 120));
    List<Side> atOnce = List.of(side(JAVA, 100), side(HTTP_1_1, 120), side(HTTP_2, 100));

    String md = GatewayReport.render(alone, atOnce, List.of(), 1, 5, "bench/run gateway");

    assertThat(md)
        .contains("| 500 | HTTP/1.1 | 1.10 | 1.20 | <= 1.15: met alone, **missed** at once |")
        .contains("| 500 | HTTP/2 | 1.20 | 1.00 | <= 1.15: **missed** alone, met at once |")
        .doesNotContain("| 500 | java client | 1.00 |");
  }

  @Test
  void shouldMeasureEachSideForTwoWholeHalvesOfTheSeconds() {
    String md =
        GatewayReport.render(
            List.of(), List.of(), List.of(), 3, 5, "bench/run gateway --seconds 5");

    assertThat(md)
        .startsWith("# Gateway: HTTP against the Java client\n\n`bench/run gateway --seconds 5`, ")
        .contains("first run 3 s of warm-up")
        .contains("each side is measured for 4 s in two halves")
        .contains("Then the three sides at once for 4 s,");
  }

  @Test
  void shouldSayTheWaitingCallsWereNotMeasuredWhenNoneWaited() {
    String md = GatewayReport.render(List.of(), List.of(), List.of(), 1, 2, "bench/run gateway");

    assertThat(md)
        .endsWith(
            "Not measured (`--waiting 0`, or the measurement failed: see the run's output).\n")
        .doesNotContain("| measure |");
  }

  @Test
  void shouldGiveEachProtocolAColumnOfTheWaitingMeasures() {
    List<Waiting> waiting =
        List.of(
            new Waiting("1.1", 1_000, 2_500, 40, 60, 8, 100L << 20, 110L << 20, 300),
            new Waiting("2", 0, 180_000, 41, 41, 2, 100L << 20, 100L << 20, -1));

    String md = GatewayReport.render(List.of(), List.of(), waiting, 1, 2, "bench/run gateway");

    assertThat(md)
        .contains("| measure | HTTP/1.1 | HTTP/2 |\n| --- | ---: | ---: |\n")
        .contains("| calls waiting | 1,000 | 0 |")
        .contains("| time until all waited | 2,500 ms | 180,000 ms |")
        .contains("| JVM threads before / while waiting | 40 / 60 | 41 / 41 |")
        .contains(
            "| heap used before / while waiting | 102,400 / 112,640 KiB | 102,400 / 102,400 KiB |")
        .contains("| heap per waiting call | 10,485 bytes | 0 bytes |")
        .contains(
            "| callers killed: until no call waits | 300 ms | **calls still waiting after 60 s** |");
  }

  @Test
  void shouldTakeASidesQuantilesInMillisecondsFromTheMicrosecondsItRecorded() {
    Tally tally = new Tally();
    for (int i = 0; i < 99; i++) {
      tally.record(10_000);
    }
    tally.record(200_000);
    tally.sent.addAndGet(101);

    Side side = tally.side(500, JAVA);

    assertThat(side.sent()).isEqualTo(101);
    assertThat(side.answered()).isEqualTo(100);
    assertThat(side.p50()).isCloseTo(10.0, within(0.01));
    assertThat(side.p99()).isCloseTo(10.0, within(0.01));
    assertThat(side.p999()).isCloseTo(200.0, within(0.2));
    assertThat(side.toDispatch()).containsExactly(0.0, 0.0);
  }

  private static final String JAVA = GatewayBench.JAVA;
  private static final String HTTP_1_1 = "gateway, HTTP/1.1";
  private static final String HTTP_2 = "gateway, HTTP/2";

  private static Side side(String name, double p99) {
    return new Side(
        500, name, 1_000, 1_000, p99 / 2, p99, p99 * 1.5, new double[] {1, 2}, new double[] {3, 4});
  }
}
