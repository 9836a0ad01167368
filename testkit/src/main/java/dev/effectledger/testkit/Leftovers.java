package dev.effectledger.testkit;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;

/**
 * Names what a test class leaves running when it ends: threads it started that are still alive and
 * child processes still running (a broker, a gateway over stdio, a browser, a Python or Node
 * client). Each fork of the build runs many classes one after another, and two forks run side by
 * side on two cores, so whatever a class leaves behind takes CPU from the classes after it: issue
 * 53 saw one class make the next six times slower. Registered for every module whose tests use this
 * testkit (META-INF/services), it prints one block per class to stderr, after giving what is
 * closing asynchronously {@link #GRACE} to end, and kills leftover child processes (a test that
 * leaves one has a bug, and the next class must not pay for it).
 *
 * <p>Threads of JVM-wide pools that outlive any one test by design (the common fork-join pool,
 * Reactor's and the JDK HTTP client's schedulers, JUnit's own) are not counted.
 */
public final class Leftovers implements TestExecutionListener {

  static final Duration GRACE = Duration.ofSeconds(5);

  /** Frames shown of one leftover thread of each kind: enough to tell what it waits on. */
  private static final int STACK_FRAMES = 8;

  private static final List<String> SHARED_POOLS =
      List.of(
          "ForkJoinPool",
          "process reaper",
          "boundedElastic-",
          "parallel-",
          "single-",
          "HttpClient-",
          "junit-",
          "surefire-",
          "Attach Listener",
          "Common-Cleaner",
          "Signal Dispatcher",
          "Reference Handler",
          "Finalizer",
          "Notification Thread",
          "process reaper",
          "Keep-Alive-",
          "idle-connection-reaper",
          "Timer-",
          "awaitility-",
          "metrics-meter-tick-thread", // Yammer metrics of the in-process brokers: one per JVM
          "CompletableFutureDelayScheduler", // the JDK's, for delayed and timed-out futures
          "PostgreSQL-JDBC-Cleaner", // the PostgreSQL driver's, one per JVM
          "UrlChecker-", // Selenium's
          // The MCP Java SDK (2.1.0): its Streamable HTTP server transport disposes of its session
          // sweep on close but not of the single-thread scheduler it made for it; one idle thread
          // per server closed, nothing of ours to close
          "streamable-http-server-transport-session-sweeper");

  private final Map<String, Set<Long>> threadsAtStart = new ConcurrentHashMap<>();
  private final Map<String, Set<Long>> processesAtStart = new ConcurrentHashMap<>();

  @Override
  public void executionStarted(TestIdentifier test) {
    String name = className(test);
    if (name != null) {
      threadsAtStart.put(name, threadIds());
      processesAtStart.put(name, processIds());
    }
  }

  @Override
  public void executionFinished(TestIdentifier test, TestExecutionResult result) {
    String name = className(test);
    if (name == null) {
      return;
    }
    Set<Long> threadsBefore = threadsAtStart.remove(name);
    Set<Long> processesBefore = processesAtStart.remove(name);
    long deadline = System.nanoTime() + GRACE.toNanos();
    List<Thread> threads;
    List<ProcessHandle> processes;
    do {
      threads = newThreads(threadsBefore);
      processes = newProcesses(processesBefore);
      if (threads.isEmpty() && processes.isEmpty()) {
        return;
      }
      try {
        Thread.sleep(100); // polling for threads and processes to end: no event tells when
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    } while (System.nanoTime() < deadline);
    StringBuilder report = new StringBuilder();
    report.append("[leftovers] ").append(name).append(" left running ").append(GRACE.toSeconds());
    report.append(" s after it ended:");
    if (!threads.isEmpty()) {
      Map<String, Long> byPrefix =
          threads.stream()
              .collect(
                  Collectors.groupingBy(
                      t -> t.getName().replaceAll("[0-9]+", "N"),
                      java.util.TreeMap::new,
                      Collectors.counting()));
      report.append("\n  ").append(threads.size()).append(" threads: ").append(byPrefix);
      // Where each kind of leftover thread is: what it waits on, or what it is still doing
      Map<String, Thread> onePerKind = new java.util.TreeMap<>();
      threads.forEach(t -> onePerKind.putIfAbsent(t.getName().replaceAll("[0-9]+", "N"), t));
      onePerKind.forEach(
          (kind, thread) -> {
            report.append("\n  ").append(thread.getName()).append(" (").append(thread.getState());
            report.append("):");
            StackTraceElement[] stack = thread.getStackTrace();
            for (int i = 0; i < Math.min(STACK_FRAMES, stack.length); i++) {
              report.append("\n    at ").append(stack[i]);
            }
          });
    }
    for (ProcessHandle process : processes) {
      report
          .append("\n  process ")
          .append(process.pid())
          .append(": ")
          .append(process.info().commandLine().map(Leftovers::shorten).orElse("?"))
          .append(" (killed)");
      process.descendants().forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly();
    }
    System.err.println(report);
  }

  private static String className(TestIdentifier test) {
    return test.getSource()
        .filter(ClassSource.class::isInstance)
        .map(s -> ((ClassSource) s).getClassName())
        .orElse(null);
  }

  private static String shorten(String commandLine) {
    String noClasspath = commandLine.replaceAll("-cp \\S+", "-cp …");
    return noClasspath.length() <= 200 ? noClasspath : noClasspath.substring(0, 200) + "…";
  }

  private static Set<Long> threadIds() {
    Set<Long> ids = new HashSet<>();
    Thread.getAllStackTraces().keySet().forEach(t -> ids.add(t.getId()));
    return ids;
  }

  private static Set<Long> processIds() {
    Set<Long> ids = new HashSet<>();
    ProcessHandle.current().descendants().forEach(p -> ids.add(p.pid()));
    return ids;
  }

  private static List<Thread> newThreads(Set<Long> before) {
    List<Thread> found = new ArrayList<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.isAlive()
          && (before == null || !before.contains(t.getId()))
          && SHARED_POOLS.stream().noneMatch(t.getName()::startsWith)) {
        found.add(t);
      }
    }
    return found;
  }

  private static List<ProcessHandle> newProcesses(Set<Long> before) {
    return ProcessHandle.current()
        .children()
        .filter(ProcessHandle::isAlive)
        .filter(p -> before == null || !before.contains(p.pid()))
        .toList();
  }
}
