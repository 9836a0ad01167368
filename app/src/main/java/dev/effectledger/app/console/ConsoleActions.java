package dev.effectledger.app.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.Lookup;
import dev.effectledger.connectors.reconcile.ReleaseFences;
import dev.effectledger.mcp.connector.McpConnectors;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.schema.BypassApprovals;
import dev.effectledger.schema.ErrorInfo;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Topics;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import dev.effectledger.schema.serde.SchemaRegistry;
import java.io.IOException;
import java.security.PrivateKey;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * What the console's operators do, each written to Kafka: a held key settled as applied (a
 * SUCCEEDED outcome with the effect id the operator names) or as not applied (a RETRYABLE outcome,
 * code {@code OPERATOR_RELEASED}), both naming the operator ({@code Outcome.actor}, which the
 * ledger audits) and the held life (attempt, incarnation), so an outcome for a key that moved on
 * since is late and changes nothing; "look up again", which asks the tool's connector as the
 * reconciler does and publishes what it proves; and bypass approvals, signed with the console's
 * signer key.
 *
 * <p>What the reconciler (and any console's "look up again") last found about each held key comes
 * from {@value Topics#FINDINGS}, which {@link ConsoleFindings} follows from its start; a key's
 * trail in tool-audit is read by {@link ConsoleAuditTrail}.
 */
public final class ConsoleActions implements AutoCloseable {

  /** The longest an approval minted in the console is valid. */
  static final Duration MAX_APPROVAL = Duration.ofHours(24);

  private static final ObjectMapper JSON = new ObjectMapper();

  /** A finished action: what to tell the operator. */
  record Done(boolean ok, String message) {}

  /** A minted approval, or why none was. */
  record Approval(String token, Instant expiresAt, String problem) {}

  private final Properties kafka;
  private final SchemaRegistry registry;
  private final Supplier<ToolPolicies> policies;
  private final String signer;
  private final PrivateKey signingKey;
  private final Clock clock;
  private final ConsoleFindings findings;
  private final ConsoleAuditTrail audit;
  private final Map<String, Connector> connectors = new ConcurrentHashMap<>();
  private KafkaProducer<String, Outcome> producer; // guarded by this
  private ReleaseFences fences; // guarded by this

  public ConsoleActions(
      Properties kafka,
      String registryUrl,
      Supplier<ToolPolicies> policies,
      String signer,
      PrivateKey signingKey,
      Duration auditLookback,
      Clock clock) {
    this.kafka = kafka;
    this.registry = SchemaRegistries.forUrl(registryUrl, kafka);
    this.policies = policies;
    this.signer = signer;
    this.signingKey = signingKey;
    this.clock = clock;
    this.audit = new ConsoleAuditTrail(kafka, registry, auditLookback, clock);
    this.findings = new ConsoleFindings(kafka);
  }

  /** What the last look this console took at a held key found, or empty. */
  String finding(String tenant, String key) {
    return findings.of(tenant + "/" + key);
  }

  Done markApplied(JsonNode held, String effectId, String result, String operator) {
    if (held == null) {
      return new Done(false, "The key is not held (any more): nothing was written.");
    }
    if (effectId.isEmpty()) {
      return new Done(false, "Name the effect id the downstream shows for it (e.g. ch_123).");
    }
    String resultJson = result.isEmpty() ? "null" : result;
    try {
      JSON.readTree(resultJson);
    } catch (IOException e) {
      return new Done(false, "The result is not JSON: " + e.getMessage());
    }
    // fenced too, a start or none: a dispatch of the life still queued must not act again
    String unfenced = fence(held, operator, true);
    if (unfenced != null) {
      return new Done(false, unfenced);
    }
    Outcome outcome =
        outcome(held, operator).setStatus(OutcomeStatus.SUCCEEDED).setEffectId(effectId).build();
    outcome.setResultJson(resultJson);
    return publish(outcome, "Marked as applied (effect " + effectId + ") by " + operator + ".");
  }

  Done markReleased(JsonNode held, String operator) {
    if (held == null) {
      return new Done(false, "The key is not held (any more): nothing was written.");
    }
    String refusal = fence(held, operator, false);
    if (refusal != null) {
      return new Done(false, refusal);
    }
    return release(held, operator);
  }

  /**
   * On a lane whose downstream ignores keys, fences the held life so that no queued dispatch of it
   * can run once it is settled ({@link ReleaseFences}); null when the settlement may go ahead, else
   * why not. A start of the life before the fence that is still unanswered refuses a release, not
   * an "applied" ({@code applying}): that one may be the very effect the operator names. Lanes
   * whose downstream honours keys or is transactional need none.
   */
  private String fence(JsonNode held, String operator, boolean applying) {
    String tool = held.path("tool").asText();
    ToolPolicy policy = policies.get().tools().get(tool);
    Connector connector;
    try {
      connector = connector(tool);
    } catch (RuntimeException e) {
      return "Could not set up the tool's connector to tell whether a queued dispatch could still"
          + " run ("
          + e.getMessage()
          + "); nothing was written.";
    }
    if (connector == null || connector.capabilities().safeToRepeat()) {
      return null;
    }
    if (!held.has("incarnation") || policy == null) {
      return "The held entry names no life (written by a ledger of an earlier release), so a"
          + " queued dispatch of it cannot be fenced; nothing was written. Look the effect up"
          + " downstream and mark it as applied, or wait for its dispatch to be answered.";
    }
    ReleaseFences.Life life =
        new ReleaseFences.Life(
            policy.lane(),
            held.path("key").asText(),
            held.path("effectKey").asText(held.path("key").asText()),
            held.path("incarnation").asLong());
    ReleaseFences.Fence fence = fences().fence(List.of(life)).get(life);
    if (fence == ReleaseFences.Fence.RELEASABLE
        || (applying && fence == ReleaseFences.Fence.STARTED)) {
      return null;
    }
    if (fence != ReleaseFences.Fence.STARTED) {
      return "Could not write the fence that keeps a queued dispatch of this key from running"
          + " (the attempt journal of lane "
          + policy.lane()
          + " could not be written or read back in time); nothing was written. Check the"
          + " brokers, then try again.";
    }
    return "An executor started this key's effect and has not answered it yet (attempt journal of"
        + " lane "
        + policy.lane()
        + "): it may be under way, so it was not released. Wait for its answer, or look the"
        + " effect up downstream and mark it as applied.";
  }

  private synchronized ReleaseFences fences() {
    if (fences == null) {
      fences = new ReleaseFences(kafka, "console");
    }
    return fences;
  }

  private Done release(JsonNode held, String operator) {
    Outcome outcome =
        outcome(held, operator)
            .setStatus(OutcomeStatus.RETRYABLE)
            .setError(
                ErrorInfo.newBuilder()
                    .setCode("OPERATOR_RELEASED")
                    .setMessage("an operator found that the effect did not happen")
                    .setRetriable(true)
                    .setCorrectiveAction("Send the intent again; it will run once.")
                    .build())
            .build();
    return publish(
        outcome, "Marked as not applied (released) by " + operator + ": its next intent runs it.");
  }

  /**
   * Asks the tool's connector about the held key's effect, as the reconciler does: found settles it
   * as applied, provably absent releases it, anything else is shown and changes nothing.
   */
  Done lookUpAgain(JsonNode held, String operator) {
    if (held == null) {
      return new Done(false, "The key is not held (any more): nothing was looked up.");
    }
    String tool = held.path("tool").asText();
    String storeKey = held.path("tenant").asText() + "/" + held.path("key").asText();
    if ("PARTIAL_SUCCESS".equals(held.path("error").asText())) {
      return new Done(
          false,
          "A partial success is an operator's to settle: a lookup of the whole would mislead.");
    }
    // fenced first: a lookup taken after the fence sees every effect the life can have
    String refusal = fence(held, operator, false);
    if (refusal != null) {
      return new Done(false, refusal);
    }
    Lookup lookup;
    try {
      lookup = connector(tool).lookup(held.path("effectKey").asText(held.path("key").asText()));
    } catch (RuntimeException e) {
      findings.show(storeKey, "lookup failed: " + e.getMessage());
      return new Done(false, "The lookup failed: " + e.getMessage());
    }
    String detail =
        switch (lookup.status()) {
          case FOUND -> "the downstream has the effect; settled as applied";
          case NOT_FOUND -> "the downstream has no effect; released";
          default -> "the downstream could not tell; still held";
        };
    String finding =
        JSON.createObjectNode()
            .put("status", lookup.status().name())
            .put("detail", detail)
            .put("since", clock.instant().toString())
            .put("by", operator)
            .toString();
    findings.record(storeKey, finding);
    return switch (lookup.status()) {
      case FOUND ->
          markApplied(
              held,
              lookup.effectId() == null ? "found" : lookup.effectId(),
              lookup.resultJson() == null ? "" : lookup.resultJson(),
              operator);
      case NOT_FOUND -> release(held, operator);
      default -> new Done(false, "The downstream could not tell (" + lookup.status() + ").");
    };
  }

  private Connector connector(String tool) {
    return connectors.computeIfAbsent(
        tool,
        t -> {
          ToolPolicy policy = policies.get().tools().get(t);
          if (policy == null) {
            throw new IllegalStateException("tool '" + t + "' is not in the policy");
          }
          Map<String, Connector> made =
              McpConnectors.all()
                  .create(ToolPolicies.of(policy), List.of(policy.lane()), Clock.systemUTC());
          return made.get(t);
        });
  }

  Approval approve(String tenant, String key, String operator, String reason, Duration valid) {
    if (signingKey == null) {
      return new Approval(
          null,
          null,
          "This processor has no signer key for the console: set console.approvals.signer and"
              + " console.approvals.key.file (effectledger approve keygen makes one), or mint the"
              + " approval with effectledger approve.");
    }
    Instant expires = clock.instant().plus(valid);
    return new Approval(
        BypassApprovals.sign(
            new BypassApprovals.Approval(signer, tenant, key, operator, reason, expires),
            signingKey),
        expires,
        null);
  }

  private Outcome.Builder outcome(JsonNode held, String operator) {
    return Outcome.newBuilder()
        .setIdempotencyKey(held.path("key").asText())
        .setTenant(held.path("tenant").asText())
        .setTool(held.path("tool").asText())
        .setAttempt(held.path("attempts").asInt())
        .setEffectKey(held.path("effectKey").asText(held.path("key").asText()))
        .setIncarnation(held.has("incarnation") ? held.path("incarnation").asLong() : null)
        .setActor(operator)
        .setCompletedAt(clock.instant());
  }

  private Done publish(Outcome outcome, String message) {
    try {
      producer()
          .send(new ProducerRecord<>(Topics.OUTCOMES, outcome.getIdempotencyKey(), outcome))
          .get(30, TimeUnit.SECONDS);
      return new Done(true, message);
    } catch (ExecutionException | TimeoutException e) {
      return new Done(
          false,
          "Could not write to " + Topics.OUTCOMES + " (" + e + "); nothing changed, try again.");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new Done(false, "Interrupted; nothing may have changed, look the key up.");
    }
  }

  private synchronized KafkaProducer<String, Outcome> producer() {
    if (producer == null) {
      Properties props = new Properties();
      props.putAll(kafka);
      props.put(ProducerConfig.ACKS_CONFIG, "all");
      props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
      props.put(ProducerConfig.CLIENT_ID_CONFIG, "effectledger-console");
      producer =
          new KafkaProducer<>(
              props, new StringSerializer(), new RegistryAvroSerde<>(registry, Outcome.class));
    }
    return producer;
  }

  /**
   * The key's audit events of the last {@code console.audit.lookback}, oldest first: read from the
   * one tool-audit partition the key's events go to (keyed by the idempotency key), at most 10 s of
   * reading and the latest 200 events.
   */
  List<Map<String, String>> auditTrail(String tenant, String key) {
    return audit.read(tenant, key);
  }

  @Override
  public void close() {
    findings.close();
    synchronized (this) {
      if (fences != null) {
        fences.close();
      }
      if (producer != null) {
        producer.close(Duration.ofSeconds(5));
      }
    }
    connectors.values().forEach(Connector::close);
  }
}
