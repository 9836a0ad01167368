package dev.effectledger.client;

import dev.effectledger.client.internal.LegacyReplies;
import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Publishes tool intents to Kafka and completes each call from the reply topic: the {@link
 * ToolCalls} of an agent runtime on the JVM.
 *
 * <p>The key is derived from the call ({@link IdempotencyKeys}); the client never mints one, so
 * calling again with the same step context after a timeout, a crash or a restart yields the same
 * key and the ledger's replayed result, never a second effect. A reply that says the action is
 * still in flight does not complete the call: it keeps waiting for the original's result, up to the
 * call's timeout, and then completes with {@link CallResult.StillRunning}.
 *
 * <p>One consumer serves every call, reading only the reply-topic partitions that hold the keys of
 * calls made, each from its end at the time of the first such call, before any intent is published,
 * so no reply can be missed.
 *
 * <p>{@link Builder#build()} creates the Kafka producer and the reply consumer (with its thread)
 * but connects to nothing: the first call fetches metadata, so a broker that is down shows up as
 * that call failing, not as the constructor blocking.
 */
public final class ToolCallClient implements ToolCalls {

  private final IntentPublisher intents;
  private final ReplyRouter replies;
  private final Duration timeout;
  private final Map<String, KeyRules> keyRules;
  private final LiveKeyRules liveKeyRules;
  private final Clock clock;

  /**
   * How a wait ended: the ledger's final reply, or no reply and why (the wire record is kept for
   * the deprecated {@link #call}, which returns it as it came).
   */
  private record Answer(ToolResult reply, CallResult.StillRunning.Reason notYet) {}

  /** Calls still waiting, for close() to answer. */
  private final Set<CompletableFuture<Answer>> open = ConcurrentHashMap.newKeySet();

  private ToolCallClient(Builder b) {
    // The Kafka settings may carry the registry's credentials (basic.auth.*, bearer.auth.*).
    SchemaRegistry registry = SchemaRegistries.forUrl(b.schemaRegistryUrl, b.kafka);
    Properties producerProps = new Properties();
    producerProps.putAll(b.kafka);
    producerProps.putAll(b.producerOverrides);
    producerProps.put(ProducerConfig.ACKS_CONFIG, "all");
    producerProps.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    this.intents =
        new IntentPublisher(
            new KafkaProducer<>(
                producerProps,
                new StringSerializer(),
                new RegistryAvroSerde<>(registry, ToolIntent.class)),
            b.intentsTopic,
            b.replyTopic,
            b.clock);
    Properties consumerProps = new Properties();
    consumerProps.putAll(b.kafka);
    consumerProps.putAll(b.consumerOverrides);
    this.replies =
        ReplyRouter.onDemand(
            consumerProps,
            b.replyTopic,
            new RegistryAvroSerde<>(registry, ToolResult.class),
            "tool-call-replies");
    this.timeout = b.timeout;
    this.keyRules = Map.copyOf(b.keyRules);
    this.liveKeyRules = b.liveKeyRules ? LiveKeyRules.start(consumerProps) : null;
    this.clock = b.clock;
  }

  /**
   * The rules {@code tool}'s keys are derived with: the applied policy's (tool-policy) when it
   * names the tool, else those given to the builder, else none.
   */
  public KeyRules keyRulesOf(String tool) {
    if (liveKeyRules != null) {
      Optional<KeyRules> live = liveKeyRules.forTool(tool);
      if (live.isPresent()) {
        return live.get();
      }
    }
    return keyRules.getOrDefault(tool, KeyRules.NONE);
  }

  /**
   * Waits until the client has read the policy tool-policy held when it started (at once when it
   * does not read it, or the topic does not exist).
   *
   * @return false when {@code wait} passed first
   */
  public boolean awaitKeyRules(Duration wait) throws InterruptedException {
    return liveKeyRules == null || liveKeyRules.awaitCurrent(wait);
  }

  /**
   * The applied policy's class of {@code tool} (tool-policy): {@code read}, {@code
   * write-idempotent}, {@code write-non-idempotent} or {@code irreversible}; empty when the client
   * does not follow the policy, none is applied, or it does not name the tool.
   */
  @Override
  public Optional<String> toolClassOf(String tool) {
    return liveKeyRules == null ? Optional.empty() : liveKeyRules.classOf(tool);
  }

  /** The version of the applied policy the client derives keys with; 0 when none. */
  public long keyRulesVersion() {
    return liveKeyRules == null ? 0 : liveKeyRules.version();
  }

  public static Builder builder() {
    return new Builder();
  }

  @Override
  public DerivedKey keyOf(ToolCall call) {
    DerivedKey derived =
        IdempotencyKeys.derive(
            call.step(), call.tool(), call.argumentsJson(), keyRulesOf(call.tool()));
    return call.idempotencyKey() == null
        ? derived
        : new DerivedKey(
            call.idempotencyKey(), derived.canonicalArguments(), derived.argumentsHash());
  }

  @Override
  public CompletableFuture<CallResult> invoke(ToolCall call, CallOptions options) {
    DerivedKey key;
    try {
      key = keyOf(call);
    } catch (KeyDerivationException e) {
      return CompletableFuture.failedFuture(e);
    }
    return await(call, key, options.timeout().orElse(timeout))
        .thenApply(
            answer ->
                answer.reply() == null
                    ? new CallResult.StillRunning(key.key(), call, answer.notYet())
                    : CallResults.of(answer.reply()));
  }

  /**
   * Publishes the call's intent and completes with the ledger's reply as it came on the wire.
   *
   * @deprecated use {@link #invoke(ToolCall)}, which answers a {@link CallResult} and no longer
   *     overloads status IN_FLIGHT with the client's own CLIENT_TIMEOUT and CLIENT_CLOSED codes.
   *     Kept for one release.
   */
  @Deprecated(since = "0.2", forRemoval = true)
  public CompletableFuture<ToolResult> call(ToolCall call) {
    DerivedKey key;
    try {
      key = keyOf(call);
    } catch (KeyDerivationException e) {
      return CompletableFuture.failedFuture(e);
    }
    return await(call, key, timeout)
        .thenApply(
            answer ->
                answer.reply() != null
                    ? answer.reply()
                    : answer.notYet() == CallResult.StillRunning.Reason.TIMED_OUT
                        ? LegacyReplies.notFinal(
                            key.key(),
                            call,
                            "CLIENT_TIMEOUT",
                            "no final result within " + timeout,
                            clock.instant())
                        : LegacyReplies.notFinal(
                            key.key(),
                            call,
                            "CLIENT_CLOSED",
                            "the client was closed before the result arrived",
                            clock.instant()));
  }

  /**
   * {@link #call} and wait.
   *
   * @deprecated use {@link #invokeAndWait(ToolCall)}. Kept for one release.
   */
  @Deprecated(since = "0.2", forRemoval = true)
  public ToolResult callAndWait(ToolCall call) throws InterruptedException {
    try {
      return call(call).get();
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException(e.getCause());
    }
  }

  private CompletableFuture<Answer> await(ToolCall call, DerivedKey key, Duration wait) {
    PendingReply reply = new PendingReply();
    // This call's own id on its intent: an answer naming another call's id is, for this one, a
    // replay (it joined the action in flight; PendingReply.asSeenBy).
    String requestId = UUID.randomUUID().toString();
    // In-flight notices (IN_FLIGHT, DUPLICATE_IN_FLIGHT) answer nothing; a release's reply only the
    // calls whose intent the ledger had read before it (PendingReply).
    Runnable stopListening =
        replies.listen(
            key.key(),
            (r, forRequest, through) -> {
              if (!isInFlightNotice(r)) {
                reply.offer(PendingReply.asSeenBy(r, forRequest, requestId), through);
              }
            });
    CompletableFuture<Answer> answer = new CompletableFuture<>();
    reply.result().thenAccept(r -> answer.complete(new Answer(r, null)));
    // completeOnTimeout cancels its timer when the answer comes first: a timer that merely ran
    // later (delayedExecutor) held every answered call, result and all, for the whole timeout.
    answer.completeOnTimeout(
        new Answer(null, CallResult.StillRunning.Reason.TIMED_OUT),
        wait.toMillis(),
        TimeUnit.MILLISECONDS);
    open.add(answer);
    answer.whenComplete(
        (r, e) -> {
          stopListening.run();
          open.remove(answer);
        });
    CompletableFuture<Void> watched;
    try {
      watched = replies.watch(intents.replyPartitionOf(key.key()));
    } catch (RuntimeException e) {
      // the reply topic's metadata did not come within max.block.ms: answered like a failed
      // publish, through the future, never thrown at the caller
      watched = CompletableFuture.failedFuture(e);
    }
    watched
        // published in the caller's trace context (its current span), on whichever thread
        .thenCompose(
            io.opentelemetry.context.Context.current()
                .wrapFunction(ready -> intents.publish(call, key, requestId)))
        // off the producer's I/O thread: it may complete the call, whose callers' code would run
        // there and hold up every send
        .thenAcceptAsync(reply::published)
        .whenComplete(
            (sent, error) -> {
              if (error != null) {
                answer.completeExceptionally(
                    new IllegalStateException(
                        "Could not publish the intent for key "
                            + key.key()
                            + "; call again with the same step context",
                        error));
              }
            });
    return answer;
  }

  private static boolean isInFlightNotice(ToolResult result) {
    return result.getStatus() == ResultStatus.IN_FLIGHT
        || result.getStatus() == ResultStatus.REJECTED
            && result.getError() != null
            && ErrorCode.DUPLICATE_IN_FLIGHT.name().equals(result.getError().getCode());
  }

  /**
   * Stops; calls still waiting complete at once with {@link
   * CallResult.StillRunning.Reason#CLIENT_CLOSED}.
   */
  @Override
  public void close() {
    if (liveKeyRules != null) {
      liveKeyRules.close();
    }
    replies.close();
    intents.close(Duration.ofSeconds(5));
    open.forEach(
        answer -> answer.complete(new Answer(null, CallResult.StillRunning.Reason.CLIENT_CLOSED)));
  }

  /** Builds a {@link ToolCallClient}. */
  public static final class Builder {
    private final Properties kafka = new Properties();
    private final Map<String, Object> producerOverrides = new HashMap<>();
    private final Map<String, Object> consumerOverrides = new HashMap<>();
    private final Map<String, KeyRules> keyRules = new HashMap<>();
    private String schemaRegistryUrl;
    private String intentsTopic = Topics.INTENTS;
    private String replyTopic = Topics.RESULTS;
    private Duration timeout = Duration.ofSeconds(30);
    private Clock clock = Clock.systemUTC();
    private boolean liveKeyRules = true;

    /**
     * Whether the client follows the applied policy's key rules on tool-policy (on by default):
     * they win over {@link #keyRules} for every tool the applied policy names, so this client
     * derives the keys the ledger and every other client derive, and a rules change reaches it
     * without a restart. Off: only the rules given here.
     */
    public Builder liveKeyRules(boolean follow) {
      this.liveKeyRules = follow;
      return this;
    }

    /**
     * Kafka settings for both clients: bootstrap.servers and any SASL/SSL settings, passed as they
     * are.
     */
    public Builder kafka(Properties settings) {
      kafka.putAll(settings);
      return this;
    }

    public Builder bootstrapServers(String servers) {
      kafka.put("bootstrap.servers", servers);
      return this;
    }

    /** Extra producer settings; acks=all and idempotence are always on. */
    public Builder producerConfig(String name, Object value) {
      producerOverrides.put(name, value);
      return this;
    }

    /** Extra consumer settings; read_committed and manual assignment are always on. */
    public Builder consumerConfig(String name, Object value) {
      consumerOverrides.put(name, value);
      return this;
    }

    /** Required: {@code http(s)://...} or {@code mock://<scope>}. */
    public Builder schemaRegistryUrl(String url) {
      this.schemaRegistryUrl = url;
      return this;
    }

    /** Default {@code tool-intents}. */
    public Builder intentsTopic(String topic) {
      this.intentsTopic = topic;
      return this;
    }

    /** Default {@code tool-results}; the ledger accepts {@code tool-results.<suffix>}. */
    public Builder replyTopic(String topic) {
      this.replyTopic = topic;
      return this;
    }

    /** How long a call waits for a final result; default 30 s. */
    public Builder timeout(Duration wait) {
      if (wait.isNegative() || wait.isZero()) {
        throw new IllegalArgumentException("timeout must be positive, was " + wait);
      }
      this.timeout = wait;
      return this;
    }

    /** Which argument fields a tool's key ignores and requires; default none. */
    public Builder keyRules(String tool, KeyRules rules) {
      keyRules.put(tool, rules);
      return this;
    }

    public Builder clock(Clock c) {
      this.clock = c;
      return this;
    }

    public ToolCallClient build() {
      if (schemaRegistryUrl == null) {
        throw new IllegalStateException(
            "schemaRegistryUrl is required (http(s)://host:port or mock://<scope>)");
      }
      if (!kafka.containsKey("bootstrap.servers")) {
        throw new IllegalStateException(
            "bootstrap.servers is required: call bootstrapServers(...) or kafka(...)");
      }
      return new ToolCallClient(this);
    }
  }
}
