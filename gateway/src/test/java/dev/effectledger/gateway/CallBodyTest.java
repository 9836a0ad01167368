package dev.effectledger.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.Test;

class CallBodyTest {

  private static CallBody parse(String json) {
    return CallBody.parse(json.getBytes(StandardCharsets.UTF_8));
  }

  private static AbstractThrowableAssert<?, ?> refused(String json, String field) {
    return assertThatThrownBy(() -> parse(json))
        .isInstanceOf(CallBody.Invalid.class)
        .satisfies(e -> assertThat(((CallBody.Invalid) e).field).isEqualTo(field));
  }

  @Test
  void shouldReadArgumentsAndStep() {
    CallBody body =
        parse(
            "{\"arguments\":{\"amount\":5,\"to\":\"c\"},\"step\":{\"run\":\"r1\",\"step\":\"pay\",\"scope\":\"customer:42\"}}");
    assertThat(body.argumentsJson()).isEqualTo("{\"amount\":5,\"to\":\"c\"}");
    assertThat(body.run()).isEqualTo("r1");
    assertThat(body.step()).isEqualTo("pay");
    assertThat(body.scope()).isEqualTo("customer:42");
    assertThat(parse("{\"arguments\":{},\"step\":{\"run\":\"r\",\"step\":\"s\"}}").scope())
        .isEmpty();
  }

  @Test
  void shouldNameTheFieldOfEveryRefusal() {
    refused("{\"arguments\": {", "")
        .hasMessageContaining("not JSON: it ends before the value it opens is closed (line 1")
        .hasMessageNotContaining("StreamReadFeature")
        .hasMessageNotContaining("Source");
    refused("[]", "");
    refused("{\"arguments\":{},\"step\":{\"run\":\"r\",\"step\":\"s\"}} {}", "");
    refused("{\"arguments\":{},\"arguments\":{},\"step\":{\"run\":\"r\",\"step\":\"s\"}}", "");
    refused("{\"step\":{\"run\":\"r\",\"step\":\"s\"}}", "/arguments");
    refused("{\"arguments\":\"{}\",\"step\":{\"run\":\"r\",\"step\":\"s\"}}", "/arguments");
    refused("{\"arguments\":{}}", "/step");
    refused("{\"arguments\":{},\"step\":[]}", "/step");
    refused("{\"arguments\":{},\"step\":{\"step\":\"s\"}}", "/step/run");
    refused("{\"arguments\":{},\"step\":{\"run\":\" \",\"step\":\"s\"}}", "/step/run");
    refused("{\"arguments\":{},\"step\":{\"run\":\"r\",\"step\":7}}", "/step/step");
    refused(
        "{\"arguments\":{},\"step\":{\"run\":\"r\",\"step\":\"s\"},\"tenant\":\"x\"}", "/tenant");
    refused("{\"arguments\":{},\"step\":{\"run\":\"r\",\"step\":\"s\",\"a/b\":1}}", "/step/a~1b");
    refused(
        "{\"arguments\":{},\"step\":{\"run\":\"" + "r".repeat(513) + "\",\"step\":\"s\"}}",
        "/step/run");
  }
}
