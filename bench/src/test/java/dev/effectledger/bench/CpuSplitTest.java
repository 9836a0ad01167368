package dev.effectledger.bench;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.bench.CpuSplit.Reading;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CpuSplitTest {

  @Test
  void shouldNameThePartOfEachThreadTheBenchStarts() {
    assertThat(CpuSplit.part("ledger-latency-20-4f1c-StreamThread-1")).isEqualTo("stream threads");
    assertThat(CpuSplit.part("ledger-latency-20-4f1c-StateUpdater-1")).isEqualTo("stream threads");
    assertThat(CpuSplit.part("executor-poll-bench")).isEqualTo("executor");
    assertThat(CpuSplit.part("effect-worker-3")).isEqualTo("executor");
    assertThat(CpuSplit.part("kafka-producer-network-thread | producer-1")).isEqualTo("client I/O");
    assertThat(
            CpuSplit.part(
                "kafka-producer-network-thread | ledger-latency-20-4f1c-StreamThread-1-producer"))
        .as("a Streams producer's sender, named after its stream thread")
        .isEqualTo("client I/O");
    assertThat(CpuSplit.part("kafka-coordinator-heartbeat-thread | latency-executor-20"))
        .isEqualTo("client I/O");
    assertThat(CpuSplit.part("latency-reader")).isEqualTo("load and reader");
    assertThat(CpuSplit.part("data-plane-kafka-request-handler-0"))
        .isEqualTo("broker and the rest");
  }

  @Test
  void shouldCountEachThreadsMoveAndLeaveWhatEndedToTheJvmsPart() {
    Reading before =
        new Reading(
            Map.of(1L, 1_000_000_000L, 2L, 500_000_000L, 3L, 700_000_000L),
            Map.of(1L, "stream threads", 2L, "executor", 3L, "client I/O"),
            5_000_000_000L,
            0);
    // thread 2 ended in the window; thread 4 started in it
    Reading after =
        new Reading(
            Map.of(1L, 2_800_000_000L, 3L, 900_000_000L, 4L, 100_000_000L),
            Map.of(1L, "stream threads", 3L, "client I/O", 4L, "client I/O"),
            8_000_000_000L,
            2_000_000_000L);

    CpuSplit split = CpuSplit.between(before, after, 2.0);

    assertThat(split.perSecond().get("stream threads")).isEqualTo(900.0);
    assertThat(split.perSecond().get("client I/O")).isEqualTo(150.0);
    assertThat(split.perSecond().get("executor")).isZero();
    assertThat(split.perSecond().get(CpuSplit.JVM)).isEqualTo((3000.0 - 2100.0) / 2);
    assertThat(split.processPerSecond()).isEqualTo(1500.0);
    assertThat(split.perSecond().keySet()).containsExactlyElementsOf(CpuSplit.PARTS);
  }

  @Test
  void shouldReadThisJvmsThreadsAndProcess() {
    Reading now = CpuSplit.read();

    assertThat(now.processNanos()).as("this JVM has run").isPositive();
    assertThat(now.threadParts()).containsKey(Thread.currentThread().getId());
    assertThat(now.threadNanos().values().stream().mapToLong(Long::longValue).sum())
        .as("the threads' clocks, within the process's")
        .isLessThanOrEqualTo(now.processNanos());
  }
}
