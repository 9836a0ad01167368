package dev.effectledger.app;

import dev.effectledger.client.ToolCallClient;
import dev.effectledger.embedded.CountingDownstream;
import dev.effectledger.embedded.SchemaRegistryServer;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * For the tests that run the built jar: writes a processor's and an executor's configuration for
 * one tool against a test downstream, starts jar processes (killed on close) and reads HTTP.
 */
final class JarFixture implements AutoCloseable {

  /** A started process and the file its output goes to. */
  record Running(Process process, Path log) {
    List<String> output() throws IOException {
      return Files.readAllLines(log);
    }

    /**
     * What a wait that gives up shows of this process: running, or its exit code and the last lines
     * of its log (a process that fails says why there).
     */
    String state() {
      if (process.isAlive()) {
        return log.getFileName() + ": running (pid " + process.pid() + ")";
      }
      return log.getFileName()
          + ": exited with code "
          + process.exitValue()
          + "; it ends:\n  "
          + String.join("\n  ", tail());
    }

    /** For a wait's {@code failFast}: it ends at once, saying why, when the process exited. */
    void assertAlive() {
      if (!process.isAlive()) {
        throw new AssertionError(state());
      }
    }

    private List<String> tail() {
      try {
        List<String> lines = Files.readAllLines(log);
        return lines.subList(Math.max(0, lines.size() - 30), lines.size());
      } catch (IOException e) {
        return List.of("(" + log + " unreadable: " + e + ")");
      }
    }
  }

  private final Path dir;
  private final String bootstrapServers;
  private final List<Running> processes = new ArrayList<>();
  private final HttpClient http = HttpClient.newHttpClient();

  private int executorHealthPort;

  JarFixture(Path dir, String bootstrapServers) {
    this.dir = dir;
    this.bootstrapServers = bootstrapServers;
  }

  /**
   * Writes tools.yaml (charge_card, irreversible, over HTTP to {@code downstream}),
   * processor.properties and executor.properties, and returns the processor's HTTP port.
   */
  int writeConfigs(
      SchemaRegistryServer registry, CountingDownstream downstream, String applicationId)
      throws IOException {
    Files.writeString(
        dir.resolve("tools.yaml"),
        """
        tools:
          charge_card:
            class: irreversible
            lane: payments
            connector: http
            settings: {url: "%s", honoursKeys: true, effectIdPointer: /id}
        """
            .formatted(downstream.url()));
    int port = JarProcess.freePort();
    executorHealthPort = JarProcess.freePort();
    Files.writeString(
        dir.resolve("processor.properties"),
        String.join(
            "\n",
            "bootstrap.servers=" + bootstrapServers,
            "schema.registry.url=" + registry.url(),
            "tools.file=tools.yaml",
            "state.dir=" + dir.resolve("state"),
            "http.port=" + port,
            "topics.create=true",
            "topics.partitions=2",
            "topics.replication=1",
            "replication.factor=1",
            "application.id=" + applicationId,
            ""));
    Files.writeString(
        dir.resolve("executor.properties"),
        String.join(
            "\n",
            "bootstrap.servers=" + bootstrapServers,
            "schema.registry.url=" + registry.url(),
            "tools.file=tools.yaml",
            "executor.group=" + applicationId + "-executor",
            "executor.http.port=" + executorHealthPort,
            // the shipped file keeps the identity in the default java.io.tmpdir folder; a test's
            // own folder keeps test runs from sharing identities there
            "executor.state.dir=" + dir.resolve("executor-state"),
            ""));
    return port;
  }

  /**
   * The executor's health endpoint (executor.http.port) in the configs {@link #writeConfigs} wrote.
   */
  String executorHealth() {
    return "http://127.0.0.1:" + executorHealthPort;
  }

  /** Starts {@code effectledger <args>}; its output goes to {@code <args[0]>.log}. */
  Running start(String... args) throws IOException {
    Running running =
        new Running(JarProcess.start(dir, args[0], args), dir.resolve(args[0] + ".log"));
    processes.add(running);
    return running;
  }

  HttpResponse<String> get(String url) throws Exception {
    return http.send(
        HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(10)).GET().build(),
        HttpResponse.BodyHandlers.ofString());
  }

  ToolCallClient client(SchemaRegistryServer registry, Duration timeout) {
    return ToolCallClient.builder()
        .bootstrapServers(bootstrapServers)
        .schemaRegistryUrl(registry.url())
        .timeout(timeout)
        .build();
  }

  /**
   * Kills what still runs; a process that had exited on its own with an error is shown on stderr
   * with the end of its log, so a test that failed because of it shows why.
   */
  @Override
  public void close() {
    for (Running running : processes) {
      // 128 + n: ended by signal n, as the tests kill (9) and stop (15) processes on purpose
      if (!running.process().isAlive()
          && running.process().exitValue() != 0
          && running.process().exitValue() < 128) {
        System.err.println("[jar] " + running.state());
      }
      running.process().destroyForcibly();
    }
  }
}
