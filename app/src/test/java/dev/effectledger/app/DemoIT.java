package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The main job, as README.md runs it, at a small size. */
@Tag("integration")
class DemoIT {

  /**
   * Runs the demo with these flags in a work directory of its own; its output, after asserting it
   * exited 0 and left none of its state (the ledger's RocksDB stores) behind.
   */
  private static String demo(String... flags) throws IOException {
    Path workDir = Files.createTempDirectory("demo-it");
    PrintStream out = System.out;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
    int status;
    try {
      String[] args = new String[flags.length + 3];
      args[0] = "demo";
      System.arraycopy(flags, 0, args, 1, flags.length);
      args[flags.length + 1] = "--work-dir";
      args[flags.length + 2] = workDir.toString();
      status = Main.run(args);
    } finally {
      System.setOut(out);
    }
    String table = captured.toString(StandardCharsets.UTF_8);
    assertThat(status).as(table).isZero();
    try (Stream<Path> left = Files.list(workDir)) {
      assertThat(left).as("what the demo left in its work directory").isEmpty();
    }
    Files.delete(workDir);
    return table;
  }

  @Test
  @Timeout(300)
  void shouldFinishWithEveryActionTakingEffectOnceAndNoReplyMissing() throws IOException {
    String table = demo("--actions", "240", "--fault-percent", "20");
    assertThat(table)
        .containsPattern("logical actions\\s+240")
        .containsPattern("effects: http \\(Idempotency-Key API\\)\\s+80")
        .containsPattern("effects: kafka \\(order events\\)\\s+80")
        .containsPattern("effects: http \\(API ignoring keys\\)\\s+80")
        .containsPattern("replies missing\\s+0")
        .contains("every action took effect exactly once");
    assertThat(table).containsPattern("held as UNKNOWN\\s+[1-9]");
  }

  @Test
  @Timeout(300)
  void shouldTakeEveryActionOnceWhenTheAgentsCallThroughTwoGateways() throws IOException {
    String table = demo("--actions", "150", "--fault-percent", "20", "--via", "gateway");
    assertThat(table)
        .containsPattern("agents call the HTTP gateways at http://127\\.0\\.0\\.1:\\d+ and")
        .containsPattern("logical actions\\s+150")
        .containsPattern("effects: http \\(Idempotency-Key API\\)\\s+50")
        .containsPattern("effects: kafka \\(order events\\)\\s+50")
        .containsPattern("effects: http \\(API ignoring keys\\)\\s+50")
        .containsPattern("conflicts \\(key reused, refused\\)\\s+[1-9]")
        .containsPattern("replies missing\\s+0")
        .contains("every action took effect exactly once");
    assertThat(table).containsPattern("held as UNKNOWN\\s+[1-9]");
  }

  @Test
  @Timeout(300)
  void shouldTakeEveryActionOnceWhenAnMcpClientCallsThroughTheMcpGateway() throws IOException {
    String table = demo("--actions", "20", "--fault-percent", "20", "--via", "mcp");
    assertThat(table)
        .containsPattern("the agent calls http://127\\.0\\.0\\.1:\\d+/mcp")
        .containsPattern("actions\\s+20\n")
        .containsPattern("effects at the MCP server\\s+20\n")
        .containsPattern("actions that took effect exactly once\\s+20\n")
        .containsPattern("connections dropped after the effect\\s+[1-9]")
        .containsPattern("answered held \\(EFFECT_HELD\\), then settled\\s+[1-9]")
        .contains("every action took effect exactly once");
  }
}
