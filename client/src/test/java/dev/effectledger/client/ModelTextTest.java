package dev.effectledger.client;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class ModelTextTest {

  @Test
  void shouldTellTheModelNotToRedoAHeldCallNorAPartOfOneThatTookEffect() {
    String held =
        ModelText.of(
            "pay",
            new CallResult.HeldUnknown(
                "k", new CallError("UNKNOWN_OUTCOME", "no answer", false, ""), false));
    String partial =
        ModelText.of(
            "book_trip",
            new CallResult.HeldUnknown(
                "k",
                new CallError(
                    "PARTIAL_SUCCESS", "2 of 3 writes done", false, "an operator settles it"),
                false,
                "{\"done\":[\"flight\",\"hotel\"],\"notDone\":[\"car\"]}"));

    assertThat(held)
        .contains("not known yet whether this action took effect", "not with other arguments");
    assertThat(partial)
        .contains("took effect in part", "2 of 3 writes done", "\"notDone\":[\"car\"]")
        .contains("Do not call book_trip again")
        .doesNotContain("not known yet");
  }

  @Test
  void shouldSayWhetherAFailureMayBeTriedLater() {
    assertThat(
            ModelText.of(
                "pay",
                new CallResult.Failed(
                    "k", new CallError("CARD_DECLINED", "declined", false, ""), false)))
        .contains(
            "did not take effect",
            "CARD_DECLINED: declined",
            "Do not call it again with the same arguments");
    assertThat(
            ModelText.of(
                "pay",
                new CallResult.Failed(
                    "k", new CallError("RETRIES_EXHAUSTED", "503", true, ""), false)))
        .contains("can be tried later");
  }
}
