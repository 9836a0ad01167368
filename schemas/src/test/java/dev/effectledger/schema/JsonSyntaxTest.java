package dev.effectledger.schema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

class JsonSyntaxTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  private static String describe(String text) {
    return JsonSyntax.describe(
        catchThrowableOfType(JsonProcessingException.class, () -> JSON.readTree(text)));
  }

  @Test
  void shouldSayWhereAndWhatWithoutJacksonsInternals() {
    assertThat(describe("{\"arguments\": {amount: 5}}"))
        .isEqualTo(
            "unexpected character 'a': was expecting double-quote to start field name (line 1,"
                + " column 16)");
  }

  @Test
  void shouldSayABodyEndedInTheMiddleOfAValue() {
    assertThat(describe("{\"arguments\": {\"amount\": 5}"))
        .startsWith("it ends before the value it opens is closed (line 1, column ")
        .doesNotContain("StreamReadFeature", "Source", "REDACTED", "marker");
  }

  @Test
  void shouldKeepNoCharacterCodes() {
    assertThat(describe("[1, 2,, 3]"))
        .doesNotContain("code", "StreamReadFeature", "Source", "REDACTED")
        .contains("line 1");
  }
}
