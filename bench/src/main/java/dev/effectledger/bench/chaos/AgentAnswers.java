package dev.effectledger.bench.chaos;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * What the agents have been answered, read from their answer files in the run's directory (the
 * orchestrator's view of the workload's progress): how many steps there are, which have a final
 * answer, and a wait for the first ones.
 */
final class AgentAnswers {

  private final Path dir;
  private final int agents;
  private final ChaosWorkload workload;

  AgentAnswers(Path dir, int agents, ChaosWorkload workload) {
    this.dir = dir;
    this.agents = agents;
    this.workload = workload;
  }

  /** Waits until the agents have {@code wanted} final answers, or {@code limit}. */
  void awaitFirst(int wanted, Duration limit) throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    while (answered() < wanted && System.nanoTime() < deadline) {
      Thread.sleep(200); // polling the agents' answer files
    }
    ChaosRun.say(answered() + " steps answered; faults start");
  }

  int steps() {
    return workload.all().stream().mapToInt(a -> a.steps().size()).sum();
  }

  int answered() {
    return answers().size();
  }

  Set<String> answeredSteps() {
    return answers().keySet();
  }

  /**
   * The final answers in the agents' answer files (SUCCEEDED, FAILED or REJECTED), each step named
   * by its agent's run id and its step id ({@link ChaosStall#answerOf}): every agent numbers its
   * steps from 0.
   */
  Map<String, String> answers() {
    Map<String, String> answers = new HashMap<>();
    for (int a = 0; a < agents; a++) {
      Path file = dir.resolve("answers-" + a + ".txt");
      int agent = a;
      try {
        if (Files.exists(file)) {
          Files.readAllLines(file).stream()
              .filter(l -> l.indexOf('\t') > 0)
              .forEach(
                  l ->
                      answers.put(
                          ChaosStall.answerOf(
                              ChaosWorkload.runId(agent), l.substring(0, l.indexOf('\t'))),
                          l.substring(l.indexOf('\t') + 1)));
        }
      } catch (IOException e) {
        ChaosRun.say("could not read " + file + ": " + e.getMessage());
      }
    }
    return answers;
  }
}
