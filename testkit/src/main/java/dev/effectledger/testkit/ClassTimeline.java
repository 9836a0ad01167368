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
 * time its JVM used meanwhile, the machine's one-minute load average at its end, and, where Linux
 * keeps pressure stall information ({@code /proc/pressure}), the seconds in which some task of the
 * machine waited for the CPU and for I/O while the class ran, and the megabytes its JVM caused to
 * be written to storage ({@code /proc/self/io}); {@code -1} where the machine does not say.
 *
 * <p>A class that takes six times its usual time tells nothing by itself: it may have had more to
 * do (its JVM's CPU time grew with its wall time), it may have waited for the CPU (wall time grew,
 * CPU time did not, CPU pressure did) or for the disk (I/O pressure grew: a class before it left
 * gigabytes of dirty pages that the next one's fsyncs wait behind), and then the timeline says what
 * ran beside it, in the other forks of the module and, with {@code tools/ci-repeat}'s timelines, in
 * another build. Failsafe's reports carry no start times, which is why this listener exists.
 */
public final class ClassTimeline implements TestExecutionListener {

  static final Path FILE = Path.of("target", "class-timeline.tsv");

  private record Started(
      long epochMillis,
      long cpuNanos,
      long cpuStallMicros,
      long ioStallMicros,
      long writtenBytes) {}

  private static final Path CPU_PRESSURE = Path.of("/proc/pressure/cpu");
  private static final Path IO_PRESSURE = Path.of("/proc/pressure/io");
  private static final Path OWN_IO = Path.of("/proc/self/io");

  private final Map<String, Started> started = new ConcurrentHashMap<>();

  @Override
  public void executionStarted(TestIdentifier test) {
    String name = className(test);
    if (name != null) {
      started.put(
          name,
          new Started(
              System.currentTimeMillis(),
              processCpuNanos(),
              someStallMicros(CPU_PRESSURE),
              someStallMicros(IO_PRESSURE),
              writtenBytes()));
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
            "%d\t%d\t%d\t%s\t%.1f\t%.1f\t%.2f\t%.1f\t%.1f\t%.0f%n",
            start.epochMillis(),
            end,
            ProcessHandle.current().pid(),
            name,
            (end - start.epochMillis()) / 1000.0,
            cpu,
            ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(),
            delta(start.cpuStallMicros(), someStallMicros(CPU_PRESSURE)) / 1e6,
            delta(start.ioStallMicros(), someStallMicros(IO_PRESSURE)) / 1e6,
            delta(start.writtenBytes(), writtenBytes()) / 1e6);
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

  /** {@code after - before}, or -1 (in the units the caller divides by) when either is unknown. */
  private static double delta(long before, long after) {
    return before < 0 || after < 0 ? -1e6 : after - before;
  }

  /**
   * The "some" total of a pressure file: microseconds in which at least one task waited; -1 where
   * the kernel keeps none.
   */
  static long someStallMicros(Path pressure) {
    return field(pressure, "some ", "total=");
  }

  private static long writtenBytes() {
    return writtenBytes(OWN_IO);
  }

  /**
   * Bytes a process has caused to be written to storage so far, from its {@code /proc/PID/io}; -1
   * where the kernel does not say.
   */
  static long writtenBytes(Path io) {
    return field(io, "write_bytes:", "write_bytes:");
  }

  private static long field(Path file, String linePrefix, String key) {
    try {
      for (String line : Files.readAllLines(file, StandardCharsets.US_ASCII)) {
        int at = line.indexOf(key);
        if (line.startsWith(linePrefix) && at >= 0) {
          String rest = line.substring(at + key.length()).trim();
          int space = rest.indexOf(' ');
          return Long.parseLong(space < 0 ? rest : rest.substring(0, space));
        }
      }
    } catch (IOException | RuntimeException e) {
      return -1; // no such file here (not Linux, or an old kernel): the columns say -1
    }
    return -1;
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
