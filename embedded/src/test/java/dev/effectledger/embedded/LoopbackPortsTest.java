package dev.effectledger.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
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

  @Test
  void shouldNotGiveAPortAnotherLiveJvmClaimed() throws Exception {
    // The module's tests run in two JVMs at once: a port one claimed stays its own until it exits.
    // Three JVMs of their own, so that no claim of this one's other tests is in the way.
    int port = 10000 + ThreadLocalRandom.current().nextInt(20000);
    Process first = claiming(port);
    try {
      assertThat(firstLine(first)).isEqualTo("claimed " + port);

      Process second = claiming(port);
      assertThat(firstLine(second)).as("while the first lives").isEqualTo("not claimed " + port);
      second.getOutputStream().close();

      first.getOutputStream().close(); // it exits, and the OS lets go of its claim
      assertThat(first.waitFor(30, TimeUnit.SECONDS)).isTrue();
      Process third = claiming(port);
      assertThat(firstLine(third)).as("once the first is gone").isEqualTo("claimed " + port);
      third.getOutputStream().close();
      assertThat(third.waitFor(30, TimeUnit.SECONDS)).isTrue();
    } finally {
      first.destroyForcibly();
    }
  }

  private static Process claiming(int port) throws IOException {
    return new ProcessBuilder(
            Path.of(System.getProperty("java.home"), "bin", "java").toString(),
            "-cp",
            System.getProperty("java.class.path"),
            ClaimingJvm.class.getName(),
            Integer.toString(port))
        .redirectErrorStream(true)
        .start();
  }

  private static String firstLine(Process process) throws IOException {
    return new BufferedReader(
            new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))
        .readLine();
  }

  /**
   * Another JVM: tries to claim the port it is given, says whether, and lives until its input ends.
   */
  static final class ClaimingJvm {
    public static void main(String[] args) throws IOException {
      int port = Integer.parseInt(args[0]);
      System.out.println((LoopbackPorts.claim(port) ? "claimed " : "not claimed ") + port);
      System.out.flush();
      System.in.readAllBytes();
    }
  }
}
