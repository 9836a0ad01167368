package dev.effectledger.topology;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** Starts {@link LedgerProcessMain} in a JVM of its own, for tests that kill it with SIGKILL. */
final class LedgerProcesses {

  private LedgerProcesses() {}

  /**
   * Starts a ledger process and waits until it is RUNNING; its output goes to {@code
   * ledger-<name>.log} in {@code work}. {@code policies}: {@code default} or {@code
   * short-deadlines}; {@code settings}: Streams settings as {@code key=value}.
   */
  static Process start(
      Path work,
      String bootstrap,
      String registryUrl,
      Path stateDir,
      String name,
      String applicationId,
      String policies,
      String... settings)
      throws IOException, InterruptedException {
    Path log = work.resolve("ledger-" + name + ".log");
    List<String> command =
        new ArrayList<>(
            List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m",
                "-cp",
                System.getProperty("java.class.path"),
                LedgerProcessMain.class.getName(),
                bootstrap,
                registryUrl,
                applicationId,
                stateDir.toString(),
                policies));
    command.addAll(List.of(settings));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    CountDownLatch running = new CountDownLatch(1);
    Thread pump =
        new Thread(
            () -> {
              try (BufferedReader out =
                      new BufferedReader(
                          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
                  var file = Files.newBufferedWriter(log)) {
                for (String line; (line = out.readLine()) != null; ) {
                  file.write(line);
                  file.newLine();
                  file.flush();
                  if (line.equals("RUNNING")) {
                    running.countDown();
                  }
                }
              } catch (IOException e) {
                // the process was killed; its output ends here
              }
            },
            "ledger-" + name + "-output");
    pump.setDaemon(true);
    pump.start();
    if (!running.await(120, TimeUnit.SECONDS)) {
      throw new AssertionError(
          "ledger process "
              + name
              + " did not reach RUNNING; see "
              + log
              + ":\n"
              + Files.readString(log));
    }
    return process;
  }

  static void kill(Process process) throws InterruptedException {
    process.destroyForcibly(); // SIGKILL on Unix: no shutdown hook, no commit
    assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
  }
}
