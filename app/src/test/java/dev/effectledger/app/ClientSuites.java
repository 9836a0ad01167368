package dev.effectledger.app;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs the Python and TypeScript clients' own test suites (clients/python, clients/typescript) as
 * child processes: python3 with the package's sources on its path, and Node 20 after {@code npm ci}
 * from the lockfile (the npm registry is the only network it needs).
 *
 * <p>The TypeScript suites install into, and build into, the one client directory, so a second test
 * JVM of this module (the integration tests run in two forks) must not run {@code npm ci} or {@code
 * tsc} while another's suite runs there: {@link #npm} holds a file lock under {@code target/} for
 * the whole install, build and run, across JVMs as well as threads.
 */
final class ClientSuites {

  static final Path PYTHON = Path.of("..", "clients", "python");
  static final Path TYPESCRIPT = Path.of("..", "clients", "typescript");

  record Run(int exit, String output) {}

  private ClientSuites() {}

  /**
   * Debian's Python, which has Debian's python3-confluent-kafka and python3-avro for the native
   * Kafka mode (the {@code python3} first on a PATH may be another installation without them).
   */
  static final String DEBIAN_PYTHON = "/usr/bin/python3";

  /** {@code python3 -m unittest} over one suite directory of the Python client. */
  static Run python(String suite, Map<String, String> env)
      throws IOException, InterruptedException {
    return python("python3", suite, env);
  }

  /**
   * The native Kafka mode's suite under {@link #DEBIAN_PYTHON}, after the client's
   * scripts/install-native-deps (Debian's python3-confluent-kafka and python3-avro, installed when
   * missing, as {@code npm ci} installs the TypeScript client's modules).
   */
  static Run pythonNative(String suite, Map<String, String> env)
      throws IOException, InterruptedException {
    Run install = run(PYTHON, List.of("bash", "scripts/install-native-deps"), Map.of(), Map.of());
    if (install.exit() != 0) {
      return new Run(install.exit(), "scripts/install-native-deps failed:\n" + install.output());
    }
    return python(DEBIAN_PYTHON, suite, env);
  }

  /** {@code <interpreter> -m unittest} over one suite directory of the Python client. */
  static Run python(String interpreter, String suite, Map<String, String> env)
      throws IOException, InterruptedException {
    return run(
        PYTHON,
        List.of(interpreter, "-m", "unittest", "discover", "-v", "-s", suite, "-t", "."),
        Map.of("PYTHONPATH", "src", "PYTHONDONTWRITEBYTECODE", "1"),
        env);
  }

  /** Whether this JVM ran {@code npm ci} already: once is enough for every suite it runs. */
  private static boolean installed;

  /** Held by the JVM whose TypeScript suite runs; see the class doc. */
  private static final Path NPM_LOCK = Path.of("target", "typescript-client.lock");

  /**
   * {@code npm ci} (once per JVM), then {@code npm run <script>} of the TypeScript client, under
   * {@link #NPM_LOCK}.
   */
  static synchronized Run npm(String script, Map<String, String> env)
      throws IOException, InterruptedException {
    Files.createDirectories(NPM_LOCK.getParent());
    try (FileChannel channel =
        FileChannel.open(NPM_LOCK, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
      FileLock held = channel.lock(); // waits while another JVM's suite runs
      try {
        return npmHoldingTheLock(script, env);
      } finally {
        held.release();
      }
    }
  }

  private static Run npmHoldingTheLock(String script, Map<String, String> env)
      throws IOException, InterruptedException {
    if (!installed) {
      Run install =
          run(
              TYPESCRIPT,
              List.of("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"),
              Map.of(),
              Map.of());
      if (install.exit() != 0) {
        return new Run(install.exit(), "npm ci failed:\n" + install.output());
      }
      installed = true;
    }
    return run(TYPESCRIPT, List.of("npm", "run", "--silent", script), Map.of(), env);
  }

  private static Run run(
      Path dir, List<String> command, Map<String, String> base, Map<String, String> env)
      throws IOException, InterruptedException {
    ProcessBuilder builder =
        new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
    builder.environment().putAll(base);
    builder.environment().putAll(env);
    Process process = builder.start();
    byte[] out = process.getInputStream().readAllBytes();
    if (!process.waitFor(240, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      return new Run(-1, new String(out, StandardCharsets.UTF_8) + "\n(timed out)");
    }
    return new Run(process.exitValue(), new String(out, StandardCharsets.UTF_8));
  }
}
