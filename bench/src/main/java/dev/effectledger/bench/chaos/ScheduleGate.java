package dev.effectledger.bench.chaos;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Holds each agent's last step until the orchestrator has injected its whole fault schedule, so the
 * agents cannot be done before it: a file in the run's directory that says {@code held} or {@code
 * released}, written by the orchestrator and read by every agent (a process of its own, restarted
 * with the same arguments).
 *
 * <p>Why: the run asserts that all its faults came while the agents were still working. With only a
 * minimum length for the workload, whether the schedule fit depended on how long the ledger took to
 * recover after each fault, which the orchestrator waits for before the next: on a doubly loaded
 * machine the recoveries took longer and the agents were done after five faults of eight
 * (2026-11-28, two builds at once). Stopping the agents' pace during recoveries instead (tried the
 * same day) held the precondition but made the three suite runs 506-535 s instead of ~390 s: the
 * pipeline, not the pace, bounds a run, and it did no work while the agents waited. The gate costs
 * nothing when the schedule ends first, as it does on a quiet machine; on a slow one, the last
 * faults may meet only the calls still in flight and the held last steps.
 *
 * <p>The file is replaced atomically, so a reader sees either word.
 */
public final class ScheduleGate {

  private static final String HELD = "held";
  private static final String RELEASED = "released";

  private final Path file;

  private ScheduleGate(Path file) {
    this.file = file;
  }

  /** A gate that holds, written to {@code file} (the orchestrator's side). */
  public static ScheduleGate held(Path file) {
    ScheduleGate gate = new ScheduleGate(file);
    gate.write(HELD);
    return gate;
  }

  /** Lets every agent send its last step: the schedule is over. */
  public void release() {
    write(RELEASED);
  }

  /**
   * True while the gate in {@code file} holds (the agents' side); false when there is no file, as
   * for a run without a bounded schedule.
   */
  public static boolean holds(Path file) {
    String word;
    try {
      word = Files.readString(file, StandardCharsets.US_ASCII).trim();
    } catch (NoSuchFileException e) {
      return false;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return switch (word) {
      case HELD -> true;
      case RELEASED -> false;
      default ->
          throw new IllegalStateException(file + " does not hold a schedule gate: '" + word + "'");
    };
  }

  private void write(String word) {
    Path next = file.resolveSibling(file.getFileName() + ".next");
    try {
      Files.writeString(next, word + "\n", StandardCharsets.US_ASCII);
      Files.move(next, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
