package dev.effectledger.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class CallRouteTest {

  @Test
  void shouldTakeJsonInUtf8Only() {
    assertThat(CallRoute.isJson("application/json")).isTrue();
    assertThat(CallRoute.isJson("Application/JSON; charset=UTF-8")).isTrue();
    assertThat(CallRoute.isJson("application/json; charset=\"utf-8\"")).isTrue();
    assertThat(CallRoute.isJson("application/json; charset=latin1")).isFalse();
    assertThat(CallRoute.isJson("application/json; charset")).isFalse();
    assertThat(CallRoute.isJson("text/plain")).isFalse();
    assertThat(CallRoute.isJson("application/jsonx")).isFalse();
  }
}
