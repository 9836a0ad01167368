package dev.effectledger.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;

class LoopbackPortsTest {

  @RepeatedTest(20)
  void shouldPickAFreePortBelowTheEphemeralRange() throws IOException {
    int port = LoopbackPorts.stable();

    assertThat(port).isBetween(10000, LoopbackPorts.ephemeralLow() - 1);
    try (ServerSocket socket = new ServerSocket()) {
      socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
      assertThat(socket.isBound()).isTrue();
    }
  }

  @Test
  void shouldNeverGiveAnOutgoingConnectionTheStablePort() throws IOException {
    int port = LoopbackPorts.stable();
    try (ServerSocket listening = new ServerSocket(port, 50, InetAddress.getLoopbackAddress());
        Socket client = new Socket(InetAddress.getLoopbackAddress(), port)) {
      assertThat(client.getLocalPort())
          .as("outgoing connections take ports of the ephemeral range only")
          .isGreaterThanOrEqualTo(LoopbackPorts.ephemeralLow());
    }
  }
}
