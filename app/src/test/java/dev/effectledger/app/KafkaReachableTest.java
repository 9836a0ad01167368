package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import org.junit.jupiter.api.Test;

class KafkaReachableTest {

  @Test
  void shouldKeepTryingWithAProgressLineAndThenSayWhatToCheck() throws Exception {
    int port;
    try (ServerSocket free = new ServerSocket(0)) {
      port = free.getLocalPort(); // closed again: nothing listens there
    }
    Properties kafka = new Properties();
    kafka.put("bootstrap.servers", "127.0.0.1:" + port);
    ByteArrayOutputStream progress = new ByteArrayOutputStream();

    assertThatThrownBy(
            () ->
                KafkaReachable.await(
                    kafka,
                    "executor",
                    Duration.ofSeconds(12),
                    new PrintStream(progress, true, StandardCharsets.UTF_8)))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("127.0.0.1:" + port)
        .hasMessageContaining("bootstrap.servers");
    assertThat(progress.toString(StandardCharsets.UTF_8))
        .contains("effectledger executor: waiting for Kafka at 127.0.0.1:" + port);
  }
}
