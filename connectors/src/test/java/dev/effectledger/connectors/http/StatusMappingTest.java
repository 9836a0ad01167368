package dev.effectledger.connectors.http;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.connectors.http.StatusMapping.Kind;
import java.util.Map;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class StatusMappingTest {

  @ParameterizedTest(name = "{0} -> {1}")
  @CsvSource({
    "200, SUCCEEDED",
    "201, SUCCEEDED",
    "204, SUCCEEDED",
    "400, FAILED",
    "401, FAILED",
    "403, FAILED",
    "404, FAILED",
    "422, FAILED",
    "408, RETRYABLE",
    "409, RETRYABLE",
    "425, RETRYABLE",
    "429, RETRYABLE",
    "503, RETRYABLE",
    "500, AMBIGUOUS",
    "502, AMBIGUOUS",
    "504, AMBIGUOUS",
    "599, AMBIGUOUS",
    "302, AMBIGUOUS",
    "101, AMBIGUOUS"
  })
  void shouldClassifySafelyByDefault(int status, Kind expected) {
    assertThat(new StatusMapping(Map.of()).classify(status)).isEqualTo(expected);
  }

  @ParameterizedTest(name = "override {0} -> {1}")
  @CsvSource({"409, FAILED", "500, RETRYABLE", "202, AMBIGUOUS"})
  void shouldPreferOverrides(int status, Kind override) {
    assertThat(new StatusMapping(Map.of(status, override)).classify(status)).isEqualTo(override);
  }
}
