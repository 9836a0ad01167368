package dev.effectledger.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class AttachRouteTest {

  @Test
  void shouldReadTheIntentOffsetOfA202sLocation() {
    assertThat(AttachRoute.intentOf(null)).isEqualTo(-1);
    assertThat(AttachRoute.intentOf("")).isEqualTo(-1);
    assertThat(AttachRoute.intentOf("intent=42")).isEqualTo(42);
    assertThat(AttachRoute.intentOf("other=1&intent=7")).isEqualTo(7);
    assertThat(AttachRoute.intentOf("other=1")).isEqualTo(-1);
  }

  @Test
  void shouldRefuseAnIntentThatIsNotAWholeNumber() {
    assertThat(AttachRoute.intentOf("intent=")).isEqualTo(AttachRoute.INVALID_INTENT);
    assertThat(AttachRoute.intentOf("intent=-1")).isEqualTo(AttachRoute.INVALID_INTENT);
    assertThat(AttachRoute.intentOf("intent=1e3")).isEqualTo(AttachRoute.INVALID_INTENT);
    assertThat(AttachRoute.intentOf("intent=99999999999999999999"))
        .isEqualTo(AttachRoute.INVALID_INTENT);
  }
}
