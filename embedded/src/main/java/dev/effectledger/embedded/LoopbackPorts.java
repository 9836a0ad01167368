package dev.effectledger.embedded;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Ports for local parts that are killed and started again on the same port (a broker, a processor's
 * HTTP server, a sample downstream).
 *
 * <p>A port the OS hands out for {@code bind(0)} lies in its ephemeral range, the same range it
 * picks the local port of every outgoing connection from. While the part is down, its clients keep
 * reconnecting to it; one of those connections can be given the very port it dials, and on loopback
 * a connection to a port nobody listens on, made from that same port, connects to itself (TCP
 * simultaneous open). The port is then taken and the part cannot bind it when it restarts: a
 * restarted broker that never comes back. {@link #stable()} picks a port below the ephemeral range,
 * which outgoing connections never use, and never the same port twice in one JVM.
 */
public final class LoopbackPorts {

  private static final Path EPHEMERAL_RANGE = Path.of("/proc/sys/net/ipv4/ip_local_port_range");

  /** Linux's default ephemeral range starts here; used where the range cannot be read. */
  private static final int DEFAULT_EPHEMERAL_LOW = 32768;

  /** Ports below are left to system services and commonly configured ones (9092, 8080, 8081...). */
  private static final int LOWEST = 10000;

  private static final int TRIES = 200;

  /**
   * Every port {@link #stable()} gave out in this JVM: never given twice, so parts of runs that go
   * on side by side (the suite's chaos runs) cannot be handed a port another part is down from.
   */
  private static final Set<Integer> GIVEN = ConcurrentHashMap.newKeySet();

  private LoopbackPorts() {}

  /**
   * A free port below the OS's ephemeral range, so that no outgoing connection can take it while
   * the part listening on it is down. Falls back to any free port where the range leaves too little
   * room below it.
   */
  public static int stable() throws IOException {
    int high = ephemeralLow();
    if (high - LOWEST < 1000) {
      return any();
    }
    for (int i = 0; i < TRIES; i++) {
      int port = ThreadLocalRandom.current().nextInt(LOWEST, high);
      if (!GIVEN.contains(port) && free(port) && GIVEN.add(port)) {
        return port;
      }
    }
    throw new IOException(
        "no free port between " + LOWEST + " and " + high + " after " + TRIES + " tries");
  }

  /** The first port of the OS's ephemeral range. */
  static int ephemeralLow() {
    try {
      // Read line by line: Files.readString trusts the size procfs reports, and reads one byte of
      // it.
      return Integer.parseInt(Files.readAllLines(EPHEMERAL_RANGE).get(0).trim().split("\\s+")[0]);
    } catch (IOException | RuntimeException unreadable) {
      return DEFAULT_EPHEMERAL_LOW; // not Linux, or no /proc: assume its default
    }
  }

  private static boolean free(int port) {
    try (ServerSocket socket = new ServerSocket()) {
      socket.bind(new InetSocketAddress(port));
      return true;
    } catch (IOException taken) {
      return false;
    }
  }

  private static int any() throws IOException {
    try (ServerSocket socket = new ServerSocket(0)) {
      return socket.getLocalPort();
    }
  }
}
