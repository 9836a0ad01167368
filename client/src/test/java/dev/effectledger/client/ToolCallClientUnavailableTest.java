package dev.effectledger.client;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A client whose Kafka does not answer: every failure comes through the call's future. */
class ToolCallClientUnavailableTest {

  @Test
  @Timeout(60)
  void shouldFailTheCallsFutureInsteadOfThrowingWhenKafkaDoesNotAnswer() throws Exception {
    int port;
    try (ServerSocket free = new ServerSocket(0)) {
      port = free.getLocalPort();
    }
    try (ToolCallClient client =
        ToolCallClient.builder()
            .bootstrapServers("127.0.0.1:" + port)
            .schemaRegistryUrl("mock://unavailable-test")
            .producerConfig("max.block.ms", 500)
            .timeout(Duration.ofSeconds(30))
            .build()) {
      CompletableFuture<CallResult> call =
          client.invoke(
              ToolCall.of(new StepContext("acme", "run-1", "pay", ""), "charge", "{\"a\":1}"));

      Assertions.assertThatThrownBy(() -> call.get(20, TimeUnit.SECONDS))
          .isInstanceOf(ExecutionException.class)
          .hasMessageContaining("Could not publish the intent");
      assertThat(call).isCompletedExceptionally();
    }
  }
}
