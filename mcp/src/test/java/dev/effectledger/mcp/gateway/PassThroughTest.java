package dev.effectledger.mcp.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import io.modelcontextprotocol.spec.McpSchema.LoggingLevel;
import io.modelcontextprotocol.spec.McpSchema.LoggingMessageNotification;
import java.util.Map;
import org.junit.jupiter.api.Test;

class PassThroughTest {

  @Test
  void shouldNameTheUpstreamInTheRelayedMessagesLogger() {
    LoggingMessageNotification own =
        new LoggingMessageNotification(LoggingLevel.WARNING, null, "disk low", Map.of("k", "v"));
    LoggingMessageNotification named =
        new LoggingMessageNotification(LoggingLevel.WARNING, "db", "slow query", null);

    assertThat(PassThrough.relayed("files", own, LoggingLevel.INFO))
        .isEqualTo(
            new LoggingMessageNotification(
                LoggingLevel.WARNING, "files", "disk low", Map.of("k", "v")));
    assertThat(PassThrough.relayed("files", named, LoggingLevel.INFO).logger())
        .isEqualTo("files/db");
  }

  @Test
  void shouldRelayFromTheConfiguredLevelOnly() {
    LoggingMessageNotification info =
        new LoggingMessageNotification(LoggingLevel.INFO, "db", "connected");

    assertThat(PassThrough.relayed("files", info, LoggingLevel.INFO)).isNotNull();
    assertThat(PassThrough.relayed("files", info, LoggingLevel.DEBUG)).isNotNull();
    assertThat(PassThrough.relayed("files", info, LoggingLevel.WARNING)).isNull();
  }

  @Test
  void shouldRelayNothingWhenLoggingIsOff() {
    assertThat(
            PassThrough.relayed(
                "files",
                new LoggingMessageNotification(LoggingLevel.EMERGENCY, "db", "down"),
                null))
        .isNull();
  }
}
