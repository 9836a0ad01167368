package dev.effectledger.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReportBaseTest {

  private static final LocalDate DAY = LocalDate.of(2026, 11, 27);

  @Test
  void shouldNameTheFirstReportOfTheDayAfterTheDay(@TempDir Path dir) {
    assertThat(Bench.reportBase(dir, "latency", DAY)).isEqualTo(dir.resolve("latency-2026-11-27"));
  }

  @Test
  void shouldNotOverwriteAnEarlierReportOrChartOfTheSameDay(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("latency-2026-11-27.md"), "first run");
    assertThat(Bench.reportBase(dir, "latency", DAY))
        .isEqualTo(dir.resolve("latency-2026-11-27-2"));

    Files.writeString(dir.resolve("latency-2026-11-27-2.png"), "second run's chart");
    assertThat(Bench.reportBase(dir, "latency", DAY))
        .isEqualTo(dir.resolve("latency-2026-11-27-3"));
    assertThat(Bench.reportBase(dir, "throughput", DAY))
        .isEqualTo(dir.resolve("throughput-2026-11-27"));
  }
}
