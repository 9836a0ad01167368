package dev.effectledger.connectors.executor;

import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.executor.internal.AttemptJournal;
import dev.effectledger.connectors.executor.internal.EffectPerformer;
import dev.effectledger.connectors.executor.internal.Invoker;
import dev.effectledger.connectors.executor.internal.JournalReader;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Collectors;

/**
 * How an {@link EffectExecutor} is put together and started: the refusal of unsafe irreversible
 * tools, the parts built from the config and the clients (the performer, the attempt journal and
 * its reader where a lane needs one, the {@link PollLoop}, the {@link PolicyFollower}), and the
 * order of the start-up steps against Kafka (the predecessor's transactions settled, the producer
 * initialised, the hanging-transaction sweep, the subscription, the poll thread).
 */
final class ExecutorStartup {

  private ExecutorStartup() {}

  /** See {@link EffectExecutor#start(ExecutorConfig, Map, ToolPolicies)}. */
  static EffectExecutor start(
      ExecutorConfig config,
      Map<String, Connector> connectors,
      ToolPolicies policies,
      Clock clock,
      Sleeper sleeper,
      Clients clients,
      String transactionalId,
      ExecutorObserver observer) {
    new LaneTools(config.lanes(), connectors, policies).refuseUnsafeIrreversibleTools();
    Map<String, Connector> copied = Map.copyOf(connectors);
    // The Kafka settings may carry the registry's credentials (basic.auth.*, bearer.auth.*).
    SchemaRegistry registry = SchemaRegistries.forUrl(config.schemaRegistryUrl(), config.kafka());
    EffectPerformer performer =
        new EffectPerformer(
            copied,
            policies,
            new Invoker(sleeper, () -> ThreadLocalRandom.current().nextDouble()),
            new RegistryAvroSerde<>(registry, Outcome.class),
            new RegistryAvroSerde<>(registry, ToolResult.class),
            clock,
            observer);
    LaneTools tools = new LaneTools(config.lanes(), copied, policies);
    List<String> journalledLanes = tools.journalledLanes();
    Set<String> journalledTopics =
        journalledLanes.stream().map(Topics::dispatch).collect(Collectors.toSet());
    AttemptJournal journal = journalledLanes.isEmpty() ? null : new AttemptJournal(transactionalId);
    JournalReader journalReader =
        journalledLanes.isEmpty() ? null : clients.journalReader().apply(journalledLanes);
    PollLoop loop =
        new PollLoop(
            config,
            clock,
            clients,
            new RegistryAvroSerde<>(registry, Dispatch.class),
            performer,
            tools,
            journal,
            journalReader,
            journalledTopics);
    PolicyFollower policy =
        new PolicyFollower(config, performer, loop.gate(), Set.copyOf(journalledLanes));
    EffectExecutor executor = new EffectExecutor(performer, loop, policy);
    // While the coordinator still knows how the predecessor's last transaction ended: after
    // initTransactions it does not, and what a broker crash left open of it can only be aborted.
    clients.hanging().settlePredecessor();
    // With a stable transactional id this fences the killed predecessor and aborts its open
    // transaction.
    loop.producer().initTransactions();
    loop.sweepHangingWith(clients.hanging().sweep());
    loop.consumer()
        .subscribe(config.lanes().stream().map(Topics::dispatch).toList(), loop.rebalance());
    loop.start();
    return executor;
  }
}
