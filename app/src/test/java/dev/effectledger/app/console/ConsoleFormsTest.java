package dev.effectledger.app.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.schema.QueryString;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class ConsoleFormsTest {

  @Test
  void shouldLinkToAKeysPageWithTenantAndKeyEncoded() {
    assertThat(ConsoleForms.keyHref("acme corp", "a&b=c/d"))
        .isEqualTo("/console/keys?tenant=acme+corp&key=a%26b%3Dc%2Fd");
    assertThat(QueryString.parse("tenant=acme+corp&key=a%26b%3Dc%2Fd"))
        .containsEntry("tenant", "acme corp")
        .containsEntry("key", "a&b=c/d");
  }

  @Test
  void shouldTakeAnApprovalExpiryAboveZeroUpToADay() {
    assertThat(ConsoleForms.approvalValidity(" 15m ")).contains(Duration.ofMinutes(15));
    assertThat(ConsoleForms.approvalValidity("24h")).contains(Duration.ofHours(24));
    assertThat(ConsoleForms.approvalValidity("PT1H")).contains(Duration.ofHours(1));
    assertThat(ConsoleForms.approvalValidity("25h")).as("longer than a day").isEmpty();
    assertThat(ConsoleForms.approvalValidity("0s")).as("zero").isEmpty();
    assertThat(ConsoleForms.approvalValidity("-PT1H")).as("negative").isEmpty();
    assertThat(ConsoleForms.approvalValidity("soon")).as("not a duration").isEmpty();
  }

  private static java.util.Map.Entry<String, String> entry(String name, String value) {
    return java.util.Map.entry(name, value);
  }
}
