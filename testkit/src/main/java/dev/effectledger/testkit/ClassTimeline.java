package dev.effectledger.testkit;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;

/**
 * Writes when each test class ran and how much CPU its JVM had meanwhile, one line a class, to
 * {@code target/class-timeline.tsv} of the module (every fork of the module appends to the same
 * file): start and end in epoch milliseconds, the fork's pid, the class, its wall time, the CPU
 * time its JVM used meanwhile, and the machine's one-minute load average at its end.
 *
 * <p>A class that takes six times its usual time tells nothing by itself: it may have had more to
 * do (its JVM's CPU time grew with its wall time), or it may have waited for the CPU (wall time
 * grew, CPU time did not), and then the timeline says what ran beside it, in the other forks of the
 * module and, with {@code tools/ci-repeat}'s timelines, in another build. Failsafe's reports carry
 * no start times, which is why this listener exists.
 */
public final class ClassTimeline implements TestExecutionListener {

  static final Path FILE = Path.of("target", "class-timeline.tsv");

  private record Started(long epochMillis, long cpuNanos) {}

  private final Map<String, Started> started = new ConcurrentHashMap<>();

  @Override
  public void executionStarted(TestIdentifier test) {
    String name = className(test);
    if (name != null) {
      started.put(name, new Started(System.currentTimeMillis(), processCpuNanos()));
    }
  }

  @Override
  public void executionFinished(TestIdentifier test, TestExecutionResult result) {
    String name = className(test);
    Started start = name == null ? null : started.remove(name);
    if (start == null) {
      return;
    }
    long end = System.currentTimeMillis();
    double cpu = (processCpuNanos() - start.cpuNanos()) / 1e9;
    String line =
        String.format(
            Locale.ROOT,
            "%d\t%d\t%d\t%s\t%.1f\t%.1f\t%.2f%n",
            start.epochMillis(),
            end,
            ProcessHandle.current().pid(),
            name,
            (end - start.epochMillis()) / 1000.0,
            cpu,
            ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage());
    try {
      Files.createDirectories(FILE.getParent());
      // one short append a class: lines of two forks do not interleave
      Files.writeString(
          FILE,
          line,
          StandardCharsets.UTF_8,
          StandardOpenOption.CREATE,
          StandardOpenOption.APPEND,
          StandardOpenOption.WRITE);
    } catch (IOException e) {
      System.err.println("[class-timeline] could not write " + FILE.toAbsolutePath() + ": " + e);
    }
  }

  private static String className(TestIdentifier test) {
    return test.getSource()
        .filter(ClassSource.class::isInstance)
        .map(s -> ((ClassSource) s).getClassName())
        .orElse(null);
  }

  private static long processCpuNanos() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return os.getProcessCpuTime();
    }
    return 0;
  }
}
