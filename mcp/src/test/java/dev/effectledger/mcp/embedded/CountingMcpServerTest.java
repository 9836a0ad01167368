package dev.effectledger.mcp.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class CountingMcpServerTest {

  @Test
  void shouldEndItsProcessWhenItsClientClosesStdin() throws Exception {
    // each McpGatewayIT run used to leave one behind: main waited on itself once stdin closed
    Process server =
        new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                CountingMcpServer.class.getName())
            .redirectError(ProcessBuilder.Redirect.DISCARD)
            .redirectOutput(ProcessBuilder.Redirect.DISCARD)
            .start();
    try {
      server.getOutputStream().close();

      assertThat(server.waitFor(30, TimeUnit.SECONDS)).as("the server exits").isTrue();
      assertThat(server.exitValue()).isZero();
    } finally {
      server.destroyForcibly();
    }
  }
}
