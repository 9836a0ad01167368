package dev.effectledger.schema;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

class ProblemTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void shouldWriteTheMembersOfRfc9457AndOurs() throws Exception {
    Problem problem =
        Problem.of(409, "idempotency-key-reused", "Key reused", "other arguments")
            .key("k1")
            .field("/arguments")
            .code("IDEMPOTENCY_KEY_REUSED", false, "use a new key");

    JsonNode body = JSON.readTree(problem.json());

    assertThat(problem.status()).isEqualTo(409);
    assertThat(problem.type()).isEqualTo("urn:effectledger:problem:idempotency-key-reused");
    assertThat(body.get("type").asText()).isEqualTo(problem.type());
    assertThat(body.get("title").asText()).isEqualTo("Key reused");
    assertThat(body.get("status").asInt()).isEqualTo(409);
    assertThat(body.get("detail").asText()).isEqualTo("other arguments");
    assertThat(body.get("key").asText()).isEqualTo("k1");
    assertThat(body.get("field").asText()).isEqualTo("/arguments");
    assertThat(body.get("code").asText()).isEqualTo("IDEMPOTENCY_KEY_REUSED");
    assertThat(body.get("retriable").asBoolean()).isFalse();
    assertThat(body.get("correctiveAction").asText()).isEqualTo("use a new key");
  }
}
