package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class LedgerHttpServerTest {

  @Test
  void shouldReadTheExpiryWindowFromTheQueryTheLastOneWinning() {
    assertThat(LedgerHttpServer.window("window=7d")).isEqualTo(Duration.ofDays(7));
    assertThat(LedgerHttpServer.window("x=1&window=PT90M")).isEqualTo(Duration.ofMinutes(90));
    assertThat(LedgerHttpServer.window("window=1d&window=12h")).isEqualTo(Duration.ofHours(12));
    assertThat(LedgerHttpServer.window("window=%2030s"))
        .as("decoded, then trimmed")
        .isEqualTo(Duration.ofSeconds(30));
  }

  @Test
  void shouldFindNoWindowWhenTheQueryNamesNoDuration() {
    assertThat(LedgerHttpServer.window(null)).isNull();
    assertThat(LedgerHttpServer.window("")).isNull();
    assertThat(LedgerHttpServer.window("windows=7d")).isNull();
    assertThat(LedgerHttpServer.window("window=a+week")).isNull();
  }
}
