package dev.effectledger.topology;

import dev.effectledger.policy.AppliedPolicy;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import org.apache.kafka.streams.processor.TaskId;

/**
 * The tool policy each ledger task of one Kafka Streams instance applies. A task's processors share
 * one {@link Task}: the policy processor sets it when the task reads a newer version from {@code
 * tool-policy} (and keeps it in the task's changelogged store, so a restored or moved task goes on
 * with the version it had), the intent and outcome processors read it for every record. A task that
 * never read an applied policy uses the seed: the file the processor started with. The holder also
 * keeps the offset of the last intent the task read, which the outcome processor puts on a
 * release's reply ({@link dev.effectledger.schema.Topics#INTENTS_THROUGH_HEADER}).
 */
public final class LivePolicies {

  private final AppliedPolicy seed;
  private final ConcurrentMap<TaskId, Task> tasks = new ConcurrentHashMap<>();

  public LivePolicies(AppliedPolicy seed) {
    this.seed = seed;
  }

  /** The policy a task uses before it has read one from the topic. */
  public AppliedPolicy seed() {
    return seed;
  }

  /** The holder of {@code task}'s policy, made on first use. */
  public Task task(TaskId task) {
    return tasks.computeIfAbsent(task, t -> new Task(seed));
  }

  /** The newest policy any task of this instance applies; the seed when none read one. */
  public AppliedPolicy newest() {
    AppliedPolicy newest = seed;
    for (Task task : tasks.values()) {
      if (task.current().version() > newest.version()) {
        newest = task.current();
      }
    }
    return newest;
  }

  /** Forgets a task this instance no longer runs. */
  public void close(TaskId task) {
    tasks.remove(task);
  }

  /** The version each task of this instance applies, by task id ({@code 0_3}). */
  public Map<String, Long> versions() {
    Map<String, Long> versions = new TreeMap<>();
    tasks.forEach((task, holder) -> versions.put(task.toString(), holder.current().version()));
    return versions;
  }

  /**
   * In-flight and held entries per tool over every task of this instance: {@code [in flight,
   * held]}.
   */
  public Map<String, long[]> counts() {
    Map<String, long[]> sum = new TreeMap<>();
    tasks
        .values()
        .forEach(
            task ->
                task.counts()
                    .snapshot()
                    .forEach(
                        (tool, c) ->
                            sum.merge(tool, c, (a, b) -> new long[] {a[0] + b[0], a[1] + b[1]})));
    return sum;
  }

  /** True while some task of this instance is still counting its entries after it started. */
  public boolean counting() {
    return tasks.values().stream().anyMatch(task -> task.counts().rebuilding());
  }

  /**
   * The policy of one task. Written and read on the task's stream thread; read by the query API.
   */
  public static final class Task {
    private volatile AppliedPolicy current;
    private final TaskCounts counts = new TaskCounts();
    private final IndexCursors cursors = new IndexCursors();
    private long intentsRead = -1;

    /**
     * The offset of the last intent the task read from its {@code tool-intents} partition since its
     * processors started, {@code -1} before the first: every intent at or below it was read before
     * anything the task does now (a task reads its partition in offset order). Stream thread only.
     */
    public long intentsRead() {
      return intentsRead;
    }

    /** The intent at {@code offset} is being read; {@code -1}: the processors (re)start. */
    public void intentRead(long offset) {
      intentsRead = offset;
    }

    /**
     * Every intent at or below {@code offset} was read before now, though the task has not read one
     * since it started: the offset an entry of its restored store was started by, under {@code
     * exactly_once_v2} (the store holds only what committed with the offsets the task resumes
     * from). Raises {@link #intentsRead}, never lowers it. Stream thread only.
     */
    public void intentsReadAtLeast(long offset) {
      if (offset > intentsRead) {
        intentsRead = offset;
      }
    }

    /** The task's live counts of in-flight and held entries. */
    public TaskCounts counts() {
      return counts;
    }

    /** Where the task's scans of its deadline index start. */
    public IndexCursors cursors() {
      return cursors;
    }

    Task(AppliedPolicy seed) {
      this.current = seed;
    }

    public AppliedPolicy current() {
      return current;
    }

    /** Moves to {@code next} when it is newer; true when it did. */
    public boolean advance(AppliedPolicy next) {
      if (next.version() <= current.version()) {
        return false;
      }
      current = next;
      return true;
    }
  }
}
