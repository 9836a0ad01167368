package dev.effectledger.embedded;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
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
 *
 * <p>Nor a port another JVM on this machine gave out: the tests of a module run in two JVMs at
 * once, and a port one of them gave to a part that is down is free to the other's bind. Each port
 * given is claimed by an OS file lock on {@code <java.io.tmpdir>/effectledger-ports/<port>}, held
 * until the JVM exits (the OS releases it then, however the JVM ended), and a port another live JVM
 * claimed is never given. A directory that cannot be written leaves the claim to this JVM alone.
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

  static final Path CLAIMS = Path.of(System.getProperty("java.io.tmpdir"), "effectledger-ports");

  /** The claims' locks, held open (and so held) for the JVM's life. */
  private static final List<FileChannel> HELD = new CopyOnWriteArrayList<>();

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
        if (claim(port)) {
          return port;
        }
        // another JVM's: stays in GIVEN, so this one never tries it again
      }
    }
    throw new IOException(
        "no free port between " + LOWEST + " and " + high + " after " + TRIES + " tries");
  }

  /**
   * Takes the machine-wide claim on {@code port} for this JVM's life: false while another live JVM
   * (or this one) holds it. True, without a claim, where the claims' directory cannot be used.
   */
  static boolean claim(int port) {
    FileChannel channel;
    try {
      Files.createDirectories(CLAIMS);
      channel =
          FileChannel.open(
              CLAIMS.resolve(Integer.toString(port)),
              StandardOpenOption.CREATE,
              StandardOpenOption.WRITE);
    } catch (IOException | SecurityException unusable) {
      return true;
    }
    boolean held;
    try {
      held = channel.tryLock() != null;
    } catch (OverlappingFileLockException thisJvms) {
      // Claimed by this JVM already (stable() never asks twice). Not closed: on POSIX, closing any
      // channel of the file drops every lock this JVM has on it.
      HELD.add(channel);
      return false;
    } catch (IOException unlockable) {
      closeQuietly(channel);
      return true; // a file system without locks: the claim is this JVM's alone
    }
    if (held) {
      HELD.add(channel);
    } else {
      closeQuietly(channel);
    }
    return held;
  }

  private static void closeQuietly(FileChannel channel) {
    try {
      channel.close();
    } catch (IOException ignored) {
      // nothing was held through it
    }
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
