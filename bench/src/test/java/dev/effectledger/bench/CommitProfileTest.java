package dev.effectledger.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.util.Map;
import org.junit.jupiter.api.Test;

class CommitProfileTest {

  @Test
  void shouldDivideTheWindowsTotalsByItsCommitsAndSeconds() {
    Map<String, Double> before =
        Map.of(
            "thread:commit-total", 100.0,
            "producer:record-send-total", 1_000.0,
            "producer:flush-time-ns-total", 5e6,
            "producer:txn-send-offsets-time-ns-total", 1e6,
            "producer:txn-commit-time-ns-total", 2e6,
            "thread:punctuate-total", 10.0,
            "thread:blocked-time-ns-total", 1e9);
    Map<String, Double> after =
        Map.of(
            "thread:commit-total", 150.0,
            "producer:record-send-total", 3_500.0,
            "producer:flush-time-ns-total", 5e6 + 50 * 4e6,
            "producer:txn-send-offsets-time-ns-total", 1e6 + 50 * 2e6,
            "producer:txn-commit-time-ns-total", 2e6 + 50 * 1.5e6,
            "thread:punctuate-total", 30.0,
            "thread:blocked-time-ns-total", 1e9 + 3e9,
            "thread:commit-latency-max", 12.0,
            "thread:punctuate-latency-max", 3.0);

    CommitProfile profile = CommitProfile.between(before, after, 2.0);

    assertThat(profile.commits()).isEqualTo(50);
    assertThat(profile.recordsPerCommit()).isCloseTo(50.0, within(1e-9));
    assertThat(profile.flushMs()).isCloseTo(4.0, within(1e-9));
    assertThat(profile.offsetsMs()).isCloseTo(2.0, within(1e-9));
    assertThat(profile.commitMs()).isCloseTo(1.5, within(1e-9));
    assertThat(profile.punctuationsPerSecond()).isCloseTo(10.0, within(1e-9));
    assertThat(profile.blockedMsPerSecond()).isCloseTo(1_500.0, within(1e-9));
    assertThat(profile.longestCommitMs()).isEqualTo(12.0);
    assertThat(profile.longestPunctuationMs()).isEqualTo(3.0);
  }

  @Test
  void shouldReadNothingForAWindowWithoutCommits() {
    Map<String, Double> totals = Map.of("thread:commit-total", 7.0);

    assertThat(CommitProfile.between(totals, totals, 10.0)).isEqualTo(CommitProfile.NONE);
  }
}
