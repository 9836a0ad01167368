package dev.effectledger.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
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
  void shouldNotGiveAPortTwiceWhileItsPartMayBeDown() throws Exception {
    // Parts are killed and started again on their port; while one is down its port is free, and a
    // run going on beside it must not be handed that port. Four threads, as runs side by side.
    Set<Integer> given = ConcurrentHashMap.newKeySet();
    AtomicInteger twice = new AtomicInteger();
    ExecutorService runs = Executors.newFixedThreadPool(4);
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 4; t++) {
        done.add(
            runs.submit(
                () -> {
                  for (int i = 0; i < 250; i++) {
                    if (!given.add(LoopbackPorts.stable())) {
                      twice.incrementAndGet();
                    }
                  }
                  return null;
                }));
      }
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      runs.shutdownNow();
    }
    assertThat(given).hasSize(1000);
    assertThat(twice).hasValue(0);
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
