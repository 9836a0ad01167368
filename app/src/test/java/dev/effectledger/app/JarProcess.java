package dev.effectledger.app;

import dev.effectledger.embedded.LoopbackPorts;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Starts the built jar as a separate OS process, its output appended to {@code <name>.log}. */
final class JarProcess {

  private JarProcess() {}

  static Process start(Path dir, String name, String... args) throws IOException {
    List<String> command =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx384m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-jar",
                Path.of("target/effectledger.jar").toAbsolutePath().toString()));
    command.addAll(List.of(args));
    return new ProcessBuilder(command)
        .directory(dir.toFile())
        .redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve(name + ".log").toFile()))
        .start();
  }

  static int freePort() throws IOException {
    return LoopbackPorts
        .stable(); // below the ephemeral range: a restarted process finds its port free
  }
}
