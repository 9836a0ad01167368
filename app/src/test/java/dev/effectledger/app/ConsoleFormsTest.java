package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class ConsoleFormsTest {

  @Test
  void shouldDecodeAFormAndKeepTheFirstValueOfANameGivenTwice() {
    assertThat(
            ConsoleForms.query(
                "tenant=acme&key=order+42%2F7&csrf=abc&key=other&failed&result=%7B%22a%22%3A1%7D"))
        .containsExactly(
            entry("tenant", "acme"),
            entry("key", "order 42/7"),
            entry("csrf", "abc"),
            entry("failed", ""),
            entry("result", "{\"a\":1}"));
  }

  @Test
  void shouldReadNoFieldsFromAnEmptyOrMissingQuery() {
    assertThat(ConsoleForms.query(null)).isEmpty();
    assertThat(ConsoleForms.query("")).isEmpty();
  }

  @Test
  void shouldLinkToAKeysPageWithTenantAndKeyEncoded() {
    assertThat(ConsoleForms.keyHref("acme corp", "a&b=c/d"))
        .isEqualTo("/console/keys?tenant=acme+corp&key=a%26b%3Dc%2Fd");
    assertThat(ConsoleForms.query("tenant=acme+corp&key=a%26b%3Dc%2Fd"))
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
