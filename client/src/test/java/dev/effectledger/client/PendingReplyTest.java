package dev.effectledger.client;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import java.time.Instant;
import org.junit.jupiter.api.Test;

class PendingReplyTest {

  private static ToolResult reply(ResultStatus status) {
    return ToolResult.newBuilder()
        .setIdempotencyKey("k1")
        .setTenant("acme")
        .setTool("charge_card")
        .setStatus(status)
        .setFirstSeenAt(Instant.EPOCH)
        .build();
  }

  @Test
  void shouldTakeAReleaseThatReadItsIntent() {
    PendingReply call = new PendingReply();
    call.published(7);

    assertThat(call.offer(reply(ResultStatus.FAILED), 7L)).isTrue();
    assertThat(call.result().join().getStatus()).isEqualTo(ResultStatus.FAILED);
  }

  @Test
  void shouldWaitPastAReleaseMadeBeforeItsIntentWasRead() {
    PendingReply call = new PendingReply();
    call.published(8);

    assertThat(call.offer(reply(ResultStatus.FAILED), 7L)).isFalse();
    assertThat(call.result()).isNotDone();
    assertThat(call.offer(reply(ResultStatus.SUCCEEDED), null)).isTrue();
    assertThat(call.result().join().getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
  }

  @Test
  void shouldTakeAReleaseThatCameBeforeTheBrokerAcknowledgedItsIntentOnceTheOffsetShowsItWasRead() {
    PendingReply read = new PendingReply();
    PendingReply notRead = new PendingReply();

    assertThat(read.offer(reply(ResultStatus.FAILED), 5L)).isFalse();
    assertThat(notRead.offer(reply(ResultStatus.FAILED), 5L)).isFalse();
    read.published(5);
    notRead.published(6);

    assertThat(read.result().join().getStatus()).isEqualTo(ResultStatus.FAILED);
    assertThat(notRead.result()).isNotDone();
  }

  @Test
  void shouldHandAReleaseKeptAsideBackToTheCallerThatPublishesInsteadOfCompletingTheCall() {
    PendingReply read = new PendingReply();
    PendingReply notRead = new PendingReply();
    read.offer(reply(ResultStatus.FAILED), 5L);
    notRead.offer(reply(ResultStatus.FAILED), 5L);

    assertThat(read.intentOffset()).as("not yet acknowledged").isEqualTo(-1);
    ToolResult kept = read.publish(5);
    assertThat(read.intentOffset()).isEqualTo(5);

    assertThat(kept).isNotNull();
    assertThat(kept.getStatus()).isEqualTo(ResultStatus.FAILED);
    assertThat(read.result()).as("completed by the caller, on its own thread").isNotDone();
    assertThat(notRead.publish(6)).isNull();
    assertThat(read.offer(reply(ResultStatus.FAILED), 4L))
        .as("the offset is known now: an older release is not taken")
        .isFalse();
  }

  @Test
  void shouldTakeNoReleaseWhoseLedgerCouldNotTellWhatItHadRead() {
    PendingReply early = new PendingReply();
    PendingReply late = new PendingReply();
    late.published(0);

    assertThat(early.offer(reply(ResultStatus.FAILED), -1L)).isFalse();
    assertThat(late.offer(reply(ResultStatus.FAILED), -1L)).isFalse();
    early.published(0);

    assertThat(early.result()).isNotDone();
    assertThat(late.result()).isNotDone();
  }

  @Test
  void shouldTakeNoReleaseWhenTheBrokerGaveNoOffset() {
    PendingReply call = new PendingReply();

    assertThat(call.offer(reply(ResultStatus.FAILED), 5L)).isFalse();
    call.published(-1);

    assertThat(call.result()).isNotDone();
  }

  @Test
  void shouldTakeEveryOtherFinalReplyWhenItComes() {
    PendingReply unpublished = new PendingReply();

    assertThat(unpublished.offer(reply(ResultStatus.UNKNOWN), null)).isTrue();
    assertThat(unpublished.result().join().getStatus()).isEqualTo(ResultStatus.UNKNOWN);
  }

  @Test
  void shouldReadASettledAnswerOfAnotherCallsIntentAsAReplay() {
    ToolResult own = reply(ResultStatus.SUCCEEDED);
    ToolResult failed = reply(ResultStatus.FAILED);
    ToolResult held = reply(ResultStatus.UNKNOWN);

    assertThat(PendingReply.asSeenBy(own, "call-1", "call-1").getReplayed())
        .as("the answer to the call that started the action")
        .isFalse();
    assertThat(PendingReply.asSeenBy(own, "call-1", "call-2").getReplayed())
        .as("a call that joined it")
        .isTrue();
    assertThat(PendingReply.asSeenBy(failed, "call-1", "call-2").getReplayed()).isTrue();
    assertThat(PendingReply.asSeenBy(held, "call-1", "call-2").getReplayed())
        .as("held: not settled, as it came")
        .isFalse();
    assertThat(PendingReply.asSeenBy(own, null, "call-2").getReplayed())
        .as("no id on the answer (a ledger of an earlier release)")
        .isFalse();
    assertThat(PendingReply.asSeenBy(own, "call-1", null).getReplayed())
        .as("a call that sent none")
        .isFalse();
  }
}
