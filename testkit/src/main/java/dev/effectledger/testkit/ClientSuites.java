package dev.effectledger.testkit;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Runs the Python and TypeScript clients' own test suites (clients/python, clients/typescript) as
 * child processes: python3 with the package's sources on its path, and Node 20 after {@code npm ci}
 * from the lockfile (the npm registry is the only network it needs).
 *
 * <p>The TypeScript suites install into, and build into, the one client directory, which the unit
 * tests' JVM and the integration-test JVMs of a module share (modules build one after another).
 * {@link #npm} installs and builds under an exclusive file lock under the project's {@code
 * target/}, and only when the client's sources or lockfile differ from what the last install and
 * build were made from (a stamp beside the lock); it then runs the suite under a shared lock, so
 * suites of two JVMs run at once and none runs while another JVM rewrites {@code node_modules} or
 * {@code dist}.
 */
public final class ClientSuites {

  public static final Path PYTHON = Path.of("..", "clients", "python");
  public static final Path TYPESCRIPT = Path.of("..", "clients", "typescript");

  public record Run(int exit, String output) {}

  private ClientSuites() {}

  /**
   * Debian's Python, which has Debian's python3-confluent-kafka and python3-avro for the native
   * Kafka mode (the {@code python3} first on a PATH may be another installation without them).
   */
  public static final String DEBIAN_PYTHON = "/usr/bin/python3";

  /** {@code python3 -m unittest} over one suite directory of the Python client. */
  public static Run python(String suite, Map<String, String> env)
      throws IOException, InterruptedException {
    return python("python3", suite, env);
  }

  /**
   * The native Kafka mode's suite under {@link #DEBIAN_PYTHON}, which needs Debian's
   * python3-confluent-kafka and python3-avro: the build installs them before the integration tests
   * (the client's scripts/install-native-deps, from app's pom), never this class.
   */
  public static Run pythonNative(String suite, Map<String, String> env)
      throws IOException, InterruptedException {
    Run present =
        run(
            PYTHON,
            List.of(DEBIAN_PYTHON, "-c", "import confluent_kafka, avro"),
            Map.of(),
            Map.of());
    if (present.exit() != 0) {
      return new Run(
          present.exit(),
          "The native mode needs Debian's python3-confluent-kafka and python3-avro: run"
              + " clients/python/scripts/install-native-deps (as root or with sudo), which the build"
              + " runs before the integration tests unless -DskipITs.\n"
              + present.output());
    }
    return python(DEBIAN_PYTHON, suite, env);
  }

  /** {@code <interpreter> -m unittest} over one suite directory of the Python client. */
  public static Run python(String interpreter, String suite, Map<String, String> env)
      throws IOException, InterruptedException {
    return run(
        PYTHON,
        List.of(interpreter, "-m", "unittest", "discover", "-v", "-s", suite, "-t", "."),
        Map.of("PYTHONPATH", "src", "PYTHONDONTWRITEBYTECODE", "1"),
        env);
  }

  /**
   * Held exclusively to install and build, shared to run a suite; see the class doc. In the
   * project's own {@code target/}, beside the modules': every module whose tests run the client
   * (app, mcp) shares one install and build.
   */
  private static final Path NPM_LOCK = Path.of("..", "target", "typescript-client.lock");

  /**
   * The digest of the sources and lockfile that {@code node_modules} and {@code dist} come from.
   */
  private static final Path BUILT_FROM = Path.of("..", "target", "typescript-client.built-from");

  /**
   * What the install and build read: everything in the client but its outputs, and the intent's
   * Avro schema that the build copies into the package (scripts/copy-schemas.mjs).
   */
  private static final List<String> SOURCES =
      List.of(
          "../../schemas/src/main/avro/ToolIntent.avsc",
          "package.json",
          "package-lock.json",
          "tsconfig.json",
          "scripts",
          "src",
          "test",
          "test-integration",
          "test-mcp",
          "test-agents",
          "examples");

  /**
   * Runs {@code npm run <script>} of the TypeScript client, a script that runs built tests without
   * building ({@code test:dist}, {@code test:integration:dist}, {@code test:mcp:dist}), after
   * {@code npm ci} and {@code npm run build} when the sources changed since the last ones.
   */
  public static Run npm(String script, Map<String, String> env)
      throws IOException, InterruptedException {
    return npm(script, List.of(), env);
  }

  /**
   * {@code npm ci} and {@code npm run build} of the TypeScript client when its sources changed
   * since the last ones, for a test that runs what the build makes (e.g. a server in {@code
   * dist/}).
   */
  public static Run build() throws IOException, InterruptedException {
    return npm(null, List.of(), Map.of());
  }

  /**
   * {@link #npm(String, Map)} with arguments for the script ({@code npm run script -- args}); a
   * null script only builds.
   */
  public static synchronized Run npm(String script, List<String> args, Map<String, String> env)
      throws IOException, InterruptedException {
    Files.createDirectories(NPM_LOCK.getParent());
    try (FileChannel channel =
        FileChannel.open(
            NPM_LOCK,
            StandardOpenOption.CREATE,
            StandardOpenOption.READ,
            StandardOpenOption.WRITE)) {
      for (int attempt = 0; attempt < 3; attempt++) {
        FileLock shared = channel.lock(0, Long.MAX_VALUE, true); // waits while another JVM builds
        try {
          if (builtFromSources()) {
            if (script == null) {
              return new Run(0, "built from the sources as they are");
            }
            List<String> command = new ArrayList<>(List.of("npm", "run", "--silent", script));
            if (!args.isEmpty()) {
              command.add("--");
              command.addAll(args);
            }
            return run(TYPESCRIPT, command, Map.of(), env);
          }
        } finally {
          shared.release();
        }
        FileLock exclusive = channel.lock(); // waits while another JVM's suite runs
        try {
          if (!builtFromSources()) {
            Run built = installAndBuild();
            if (built.exit() != 0) {
              return built;
            }
          }
        } finally {
          exclusive.release();
        }
      }
      return new Run(-1, "the TypeScript client's sources kept changing while it was built");
    }
  }

  /** Whether {@code node_modules} and {@code dist} were made from the sources as they are. */
  private static boolean builtFromSources() throws IOException {
    return Files.isDirectory(TYPESCRIPT.resolve("node_modules"))
        && Files.isDirectory(TYPESCRIPT.resolve("dist"))
        && Files.exists(BUILT_FROM)
        && Files.readString(BUILT_FROM).equals(sourcesDigest());
  }

  private static Run installAndBuild() throws IOException, InterruptedException {
    String digest = sourcesDigest();
    Files.deleteIfExists(BUILT_FROM);
    for (List<String> step :
        List.of(
            List.of("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"),
            List.of("npm", "run", "--silent", "build"))) {
      Run done = run(TYPESCRIPT, step, Map.of(), Map.of());
      if (done.exit() != 0) {
        return new Run(done.exit(), String.join(" ", step) + " failed:\n" + done.output());
      }
    }
    Files.writeString(BUILT_FROM, digest);
    return new Run(0, "");
  }

  /** SHA-256 over the path and bytes of every file of {@link #SOURCES}, in path order. */
  private static String sourcesDigest() throws IOException {
    MessageDigest sha;
    try {
      sha = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    List<Path> files = new ArrayList<>();
    for (String source : SOURCES) {
      Path path = TYPESCRIPT.resolve(source);
      if (Files.isDirectory(path)) {
        try (Stream<Path> walk = Files.walk(path)) {
          walk.filter(Files::isRegularFile).forEach(files::add);
        }
      } else if (Files.exists(path)) {
        files.add(path);
      }
    }
    files.sort(Comparator.comparing(p -> TYPESCRIPT.relativize(p).toString()));
    for (Path file : files) {
      sha.update(TYPESCRIPT.relativize(file).toString().getBytes(StandardCharsets.UTF_8));
      sha.update((byte) 0);
      sha.update(Files.readAllBytes(file));
      sha.update((byte) 0);
    }
    return HexFormat.of().formatHex(sha.digest());
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
