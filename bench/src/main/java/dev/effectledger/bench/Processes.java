package dev.effectledger.bench;

import dev.effectledger.embedded.LoopbackPorts;
import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The OS processes of a chaos or failover run: each started from a command (mostly the {@code
 * effectledger} jar) in one directory, its output appended to {@code <name>.log} there, killed with
 * SIGKILL and started again with the same command. Closing (or the harness's own JVM ending) stops
 * every one, newest first.
 */
public final class Processes implements AutoCloseable {

  private static final HttpClient HTTP =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  private final Path dir;
  private final Path jar;
  private final List<Node> nodes = new ArrayList<>();
  private final Thread reaper = new Thread(this::destroyAll, "processes-reaper");

  /** A process that can be killed with SIGKILL and started again with the same command. */
  public final class Node {
    private final String name;
    private final List<String> command;
    private volatile Process process;
    private volatile boolean killing;

    private Node(String name, List<String> command) {
      this.name = name;
      this.command = List.copyOf(command);
    }

    public Node start() throws IOException {
      process =
          new ProcessBuilder(command)
              .directory(dir.toFile())
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.appendTo(log().toFile()))
              .start();
      return this;
    }

    /** SIGKILL, and waits for the process to be gone. */
    public void kill() throws InterruptedException {
      killing = true;
      process.destroyForcibly();
      process.waitFor(30, TimeUnit.SECONDS);
    }

    public void restart() throws IOException {
      start();
      killing = false;
    }

    public boolean alive() {
      return process != null && process.isAlive();
    }

    /** True between {@link #kill} and {@link #restart}: its absence is the harness's doing. */
    public boolean killing() {
      return killing;
    }

    /** The process, null before the first start. */
    public Process process() {
      return process;
    }

    public String name() {
      return name;
    }

    public Path log() {
      return dir.resolve(name + ".log");
    }

    /**
     * Waits for a line starting with {@code prefix} in the log and returns the rest of it.
     *
     * @throws IllegalStateException when the process exits first, or after {@code timeout}
     */
    public String awaitLine(String prefix, Duration timeout)
        throws InterruptedException, IOException {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (System.nanoTime() < deadline) {
        if (!process.isAlive()) {
          throw new IllegalStateException(
              name
                  + " exited with "
                  + process.exitValue()
                  + " before printing '"
                  + prefix
                  + "'; "
                  + log()
                  + " says why");
        }
        if (Files.exists(log())) {
          for (String line : Files.readAllLines(log())) {
            if (line.startsWith(prefix)) {
              return line.substring(prefix.length()).trim();
            }
          }
        }
        Thread.sleep(200); // polling the log for the line
      }
      throw new IllegalStateException("no '" + prefix + "' line in " + log() + " after " + timeout);
    }
  }

  /**
   * Processes started in {@code dir}, with the effectledger jar found from the working directory or
   * {@code -Deffectledger.jar}.
   */
  public Processes(Path dir) throws IOException {
    this.dir = dir;
    Files.createDirectories(dir);
    this.jar =
        Stream.of(
                System.getProperty("effectledger.jar", ""),
                "app/target/effectledger.jar",
                "../app/target/effectledger.jar")
            .filter(p -> !p.isEmpty())
            .map(Path::of)
            .filter(Files::exists)
            .findFirst()
            .orElseThrow(
                () ->
                    new IllegalStateException(
                        "app/target/effectledger.jar is missing; build it with ./mvnw -B -DskipTests install"))
            .toAbsolutePath();
    Runtime.getRuntime().addShutdownHook(reaper);
  }

  public Path dir() {
    return dir;
  }

  /** A process of {@code command}, not started yet. */
  public Node node(String name, List<String> command) {
    Node node = new Node(name, command);
    synchronized (nodes) {
      nodes.add(node);
    }
    return node;
  }

  /** The broker class that logs the transaction markers it skips. */
  private static final String SKIPPED_MARKERS_LOGGER =
      "kafka.coordinator.transaction.TransactionMarkerChannelManager";

  /** A process of {@code effectledger <args>} with a small serial-GC heap, not started yet. */
  public Node jar(String name, String heap, String... args) {
    List<String> command =
        new ArrayList<>(
            List.of(
                java(),
                "-Xmx" + heap,
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                // a transaction coordinator that skips a partition's commit or abort marker says
                // so at INFO (ChaosDeployment.skippedMarkers counts it)
                "-Dorg.slf4j.simpleLogger.log." + SKIPPED_MARKERS_LOGGER + "=info",
                "-jar",
                jar.toString()));
    command.addAll(List.of(args));
    return node(name, command);
  }

  /** This JVM's java executable. */
  public static String java() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  /** This JVM's class path with absolute entries, for processes started in another directory. */
  public static String absoluteClassPath() {
    return Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
        .map(p -> Path.of(p).toAbsolutePath().toString())
        .collect(Collectors.joining(File.pathSeparator));
  }

  /**
   * True when the processor whose HTTP endpoint is on {@code port} answers {@code /readyz} with
   * 200.
   */
  public static boolean ready(int port) {
    try {
      return HTTP.send(
                  HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/readyz"))
                      .timeout(Duration.ofSeconds(2))
                      .build(),
                  HttpResponse.BodyHandlers.ofString())
              .statusCode()
          == 200;
    } catch (IOException e) {
      return false; // not listening (yet)
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /** Waits until the processor on {@code port} is ready, or throws after {@code limit}. */
  public static void awaitReady(int port, Duration limit) throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    while (!ready(port)) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException(
            "the processor on port "
                + port
                + " was not ready after "
                + limit
                + "; its log says why");
      }
      Thread.sleep(250); // polling readiness
    }
  }

  /**
   * The value of {@code series} (a Prometheus series name with its labels, as the processor on
   * {@code port} writes it in {@code /metrics}, e.g. {@code
   * effectledger_store_lag_records{role="standby"}}); NaN when the processor does not answer, has
   * no such series yet, or cannot tell (the series reads NaN).
   */
  public static double metric(int port, String series) {
    try {
      String metrics =
          HTTP.send(
                  HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                      .timeout(Duration.ofSeconds(2))
                      .build(),
                  HttpResponse.BodyHandlers.ofString())
              .body();
      for (String line : metrics.split("\n")) {
        if (line.startsWith(series + " ")) {
          return Double.parseDouble(line.substring(series.length()).trim());
        }
      }
      return Double.NaN;
    } catch (IOException e) {
      return Double.NaN; // not listening (yet)
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Double.NaN;
    }
  }

  public static int freePort() throws IOException {
    return LoopbackPorts
        .stable(); // below the ephemeral range: a restarted part finds its port free
  }

  private void destroyAll() {
    List<Node> newestFirst;
    synchronized (nodes) {
      newestFirst = new ArrayList<>(nodes);
    }
    Collections.reverse(newestFirst);
    for (Node node : newestFirst) {
      if (node.process != null) {
        node.process.destroy();
        try {
          if (!node.process.waitFor(20, TimeUnit.SECONDS)) {
            node.process.destroyForcibly();
          }
        } catch (InterruptedException e) {
          node.process.destroyForcibly();
          Thread.currentThread().interrupt();
        }
      }
    }
  }

  @Override
  public void close() {
    destroyAll();
    try {
      Runtime.getRuntime().removeShutdownHook(reaper);
    } catch (IllegalStateException e) {
      // the JVM is already shutting down and the reaper runs
    }
  }
}
