package dev.effectledger.client;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.schema.ArgumentsHash;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The published vectors (computed by an independent JavaScript implementation of
 * docs/key-derivation.md, tools/key-vectors.mjs) must come out of the Java client exactly. The one
 * copy is clients/key-vectors.json, which the Python and TypeScript clients' tests read too.
 */
class KeyVectorsTest {

  private static final ObjectMapper JSON = new ObjectMapper();
  static final Path VECTORS = Path.of("..", "clients", "key-vectors.json");

  static Stream<Arguments> vectors() throws IOException {
    try (InputStream in = Files.newInputStream(VECTORS)) {
      JsonNode all = JSON.readTree(in);
      List<Arguments> out = new ArrayList<>();
      all.forEach(v -> out.add(Arguments.of(v.get("name").asText(), v)));
      return out.stream();
    }
  }

  private static List<String> strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("vectors")
  void shouldMatchVector(String name, JsonNode v) {
    StepContext step =
        new StepContext(
            v.get("tenant").asText(),
            v.get("runId").asText(),
            v.get("stepId").asText(),
            v.get("scope").asText());
    KeyRules rules = new KeyRules(strings(v.get("volatile")), strings(v.get("required")));

    if (v.has("error")) {
      assertThatThrownBy(
              () ->
                  IdempotencyKeys.derive(
                      step, v.get("tool").asText(), v.get("arguments").asText(), rules))
          .isInstanceOfSatisfying(
              KeyDerivationException.class,
              e -> assertThat(e.code()).isEqualTo(v.get("error").asText()));
      return;
    }
    DerivedKey derived =
        IdempotencyKeys.derive(step, v.get("tool").asText(), v.get("arguments").asText(), rules);
    assertThat(derived.canonicalArguments()).isEqualTo(v.get("canonicalArguments").asText());
    assertThat(derived.argumentsHash()).isEqualTo(v.get("argumentsHash").asText());
    assertThat(derived.key()).isEqualTo(v.get("key").asText());
    assertThat(ArgumentsHash.of(v.get("arguments").asText(), rules.volatileFields()))
        .as("the hash the ledger recomputes from the raw arguments and the tool's key.ignore")
        .isEqualTo(v.get("argumentsHash").asText());
  }

  @Test
  void shouldHoldAtLeastThirtyVectorsIncludingTheTraps() throws IOException {
    List<String> names = vectors().map(a -> (String) a.get()[0]).toList();

    assertThat(names)
        .hasSizeGreaterThanOrEqualTo(30)
        .contains(
            "charge: whitespace and newlines",
            "charge: key order",
            "charge: 1000.0 for 1000",
            "charge: unicode escapes",
            "charge: different amount",
            "charge: different recipient",
            "charge: different step");
  }
}
