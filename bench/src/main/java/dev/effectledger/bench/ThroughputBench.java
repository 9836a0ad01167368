package dev.effectledger.bench;

import dev.effectledger.bench.Bench.Run;
import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.schema.Topics;
import dev.effectledger.topology.LedgerConfig;
import dev.effectledger.topology.LedgerTopology;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.streams.StreamsConfig;

/**
 * {@code bench/run throughput}: the ledger gate's throughput against the baseline dedup topology,
 * and exactly_once_v2 against at_least_once, on one embedded broker, same input, in one run.
 */
final class ThroughputBench {

  private ThroughputBench() {}

  /** {@code bench/run throughput}: see the class comment. */
  static int run(int intents, int repeats) throws Exception {
    Bench.say("starting an embedded broker");
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1)) {
      Bench.createTopics(kafka);
      int distinct = Bench.produce(kafka.bootstrapServers(), intents).distinct();
      Bench.say(
          "produced "
              + intents
              + " intents ("
              + distinct
              + " distinct keys, "
              + (intents - distinct) * 100 / intents
              + "% duplicates) to "
              + Topics.INTENTS
              + " and "
              + Bench.BASELINE_INPUT);
      List<Run> runs = new ArrayList<>();
      // A warm-up round, not counted: the first round ran at half the later rounds' rate on every
      // side (JIT, the broker's page cache), which made a median of three a coin toss. The JIT
      // compilers stay busy for about two rounds more (each run reports their time per intent):
      // the later rounds are the steady ones.
      Bench.say("warm-up round, not counted");
      Bench.measure(
          kafka,
          "baseline",
          StreamsConfig.EXACTLY_ONCE_V2,
          BaselineDedupTopology.build(Bench.BASELINE_INPUT, "baseline-out"),
          Bench.BASELINE_INPUT,
          "baseline-warm-up",
          intents);
      Bench.measureLedger(kafka, StreamsConfig.EXACTLY_ONCE_V2, "ledger-warm-up", intents);
      int round = 0;
      for (int r = 0; r < repeats; r++) {
        for (String guarantee :
            List.of(StreamsConfig.EXACTLY_ONCE_V2, StreamsConfig.AT_LEAST_ONCE)) {
          round++;
          runs.add(
              Bench.measure(
                  kafka,
                  "baseline",
                  guarantee,
                  BaselineDedupTopology.build(Bench.BASELINE_INPUT, "baseline-out"),
                  Bench.BASELINE_INPUT,
                  "baseline-" + round,
                  intents));
          runs.add(Bench.measureLedger(kafka, guarantee, "ledger-" + round, intents));
          if (guarantee.equals(StreamsConfig.EXACTLY_ONCE_V2)) {
            runs.add(
                Bench.measure(
                    kafka,
                    Bench.BASELINE_BATCHED,
                    guarantee,
                    BaselineDedupTopology.build(Bench.BASELINE_INPUT, "baseline-out"),
                    Bench.BASELINE_INPUT,
                    "baseline-128k-" + round,
                    intents));
            runs.add(
                Bench.measure(
                    kafka,
                    Bench.SMALL_BATCHES,
                    guarantee,
                    LedgerTopology.build(LedgerConfig.of(Bench.POLICIES, Bench.REGISTRY)),
                    Topics.INTENTS,
                    "ledger-16k-" + round,
                    intents));
            // What checking each intent's arguments hash costs: the same ledger without the check.
            runs.add(
                Bench.measure(
                    kafka,
                    Bench.UNCHECKED,
                    guarantee,
                    LedgerTopology.build(
                        LedgerConfig.of(Bench.POLICIES, Bench.REGISTRY)
                            .withArgumentsHashCheck(false)),
                    Topics.INTENTS,
                    "ledger-unchecked-" + round,
                    intents));
          }
          runs.add(
              Bench.measure(
                  kafka,
                  Bench.TRANSACTIONAL_STORES_OFF,
                  guarantee,
                  LedgerTopology.build(LedgerConfig.of(Bench.POLICIES, Bench.REGISTRY)),
                  Topics.INTENTS,
                  "ledger-tss-off-" + round,
                  intents));
          // The stores with Kafka Streams' record cache (ledger.store.caching=true; off by
          // default).
          runs.add(
              Bench.measure(
                  kafka,
                  Bench.CACHED,
                  guarantee,
                  LedgerTopology.build(
                      LedgerConfig.of(Bench.POLICIES, Bench.REGISTRY).withStoreCaching(true)),
                  Topics.INTENTS,
                  "ledger-cached-" + round,
                  intents));
        }
      }
      ThroughputReport.write(runs, intents, distinct, repeats);
    }
    return 0;
  }
}
