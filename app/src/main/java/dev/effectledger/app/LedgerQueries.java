package dev.effectledger.app;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.policy.Durations;
import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import dev.effectledger.schema.LedgerStore;
import dev.effectledger.topology.HeldKeys;
import dev.effectledger.topology.LivePolicies;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyQueryMetadata;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsMetadata;
import org.apache.kafka.streams.state.HostInfo;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * The answers the query API and the console give from the ledger: one key's entry (from the
 * instance that owns it), the keys held as UNKNOWN, the per-tool overview, a tool's expiry counts
 * and the tool policy versions; summed over every instance ({@link InstanceFanOut}) unless asked
 * for this instance's alone. Holds what the processor serves: its Kafka Streams, its address among
 * the instances, its live policies and the double effects its ledger saw.
 */
final class LedgerQueries {

  /** Most held keys one instance lists. */
  static final int MAX_HELD = 500;

  private static final ObjectMapper JSON = new ObjectMapper();

  private final PrometheusMeterRegistry metrics;
  private final InstanceFanOut instances = new InstanceFanOut();
  private volatile HostInfo self;
  private volatile KafkaStreams streams;
  private volatile LivePolicies livePolicies;

  /** The latest double effects this processor's ledger saw (empty until {@link #doubleEffects}). */
  private volatile Supplier<List<MicrometerObserver.DoubleEffect>> doubleEffects = List::of;

  LedgerQueries(PrometheusMeterRegistry metrics, HostInfo self) {
    this.metrics = metrics;
    this.self = self;
  }

  /** Answers from {@code ledger}, and the policy versions {@code policies} (null: none) holds. */
  void serve(KafkaStreams ledger, LivePolicies policies) {
    this.livePolicies = policies;
    this.streams = ledger;
  }

  /** This instance's address in Kafka Streams' metadata ({@code application.server}). */
  void advertisedAs(HostInfo address) {
    this.self = address;
  }

  HostInfo self() {
    return self;
  }

  /** Where the overview takes the double effects this processor saw from. */
  void doubleEffects(Supplier<List<MicrometerObserver.DoubleEffect>> seen) {
    this.doubleEffects = seen;
  }

  KafkaStreams.State state() {
    return streams.state();
  }

  InstanceFanOut instances() {
    return instances;
  }

  /**
   * {@code GET /v1/held}: the entries held as UNKNOWN, read through the held index (never a scan of
   * the ledger), on this instance and, unless {@code localOnly}, every other one it can reach.
   */
  ObjectNode held(String authorization, boolean localOnly) {
    ObjectNode out = JSON.createObjectNode();
    ArrayNode keys = out.putArray("held");
    out.put("counting", livePolicies != null && livePolicies.counting());
    if (streams.state() != KafkaStreams.State.RUNNING) {
      out.put("instances", 0);
      out.putArray("unreachable").add(InstanceFanOut.address(self) + " (" + streams.state() + ")");
      return out;
    }
    ReadOnlyKeyValueStore<String, LedgerEntry> entries = ledger();
    ReadOnlyKeyValueStore<Bytes, byte[]> index =
        streams.store(
            StoreQueryParameters.fromNameAndType(
                LedgerStore.DEADLINES, QueryableStoreTypes.<Bytes, byte[]>keyValueStore()));
    for (String storeKey : HeldKeys.list(index, MAX_HELD)) {
      LedgerEntry entry = entries.get(storeKey);
      if (entry != null && entry.getState() == LedgerState.UNKNOWN) {
        keys.add(LedgerEntryJson.describe(entry, false));
      }
    }
    out.put("instances", 1);
    ArrayNode unreachable = out.putArray("unreachable");
    if (!localOnly) {
      for (JsonNode other :
          others("/v1/held", authorization, unreachable, InstanceFanOut.TIMEOUT)) {
        InstanceFanOut.mergeHeld(out, other);
      }
    }
    return out;
  }

  /**
   * {@code GET /v1/overview}: per tool, the ledger's decisions so far (the counters /metrics
   * shows), the entries in flight and held now, and the time from dispatch to outcome (p50, p99);
   * summed over the instances (the percentiles: the highest instance's).
   */
  ObjectNode overview(String authorization, boolean localOnly) {
    ObjectNode out = JSON.createObjectNode();
    ObjectNode tools = out.putObject("tools");
    metrics
        .find("effectledger.decisions")
        .counters()
        .forEach(
            c ->
                InstanceFanOut.tool(tools, c.getId().getTag("tool"))
                    .with("decisions")
                    .put(c.getId().getTag("decision"), (long) c.count()));
    metrics
        .find("effectledger.outcome.latency")
        .timers()
        .forEach(
            t -> {
              ObjectNode tool = InstanceFanOut.tool(tools, t.getId().getTag("tool"));
              for (var p : t.takeSnapshot().percentileValues()) {
                String name =
                    p.percentile() == 0.5 ? "p50Ms" : p.percentile() == 0.99 ? "p99Ms" : null;
                if (name != null) {
                  tool.put(name, p.value(TimeUnit.MILLISECONDS));
                }
              }
            });
    if (livePolicies != null) {
      livePolicies
          .counts()
          .forEach(
              (name, counts) -> {
                ObjectNode tool = InstanceFanOut.tool(tools, name);
                tool.put("inFlight", counts[0]);
                tool.put("held", counts[1]);
              });
    }
    out.put("counting", livePolicies != null && livePolicies.counting());
    out.put("instances", 1);
    ArrayNode doubles = out.putArray("doubleEffects");
    for (MicrometerObserver.DoubleEffect d : doubleEffects.get()) {
      doubles
          .addObject()
          .put("tool", d.tool())
          .put("tenant", d.tenant())
          .put("key", d.key())
          .put("firstEffectId", d.firstEffectId())
          .put("secondEffectId", d.secondEffectId())
          .put("at", d.at());
    }
    ArrayNode unreachable = out.putArray("unreachable");
    if (!localOnly) {
      for (JsonNode other :
          others("/v1/overview", authorization, unreachable, InstanceFanOut.TIMEOUT)) {
        InstanceFanOut.mergeOverview(out, other);
      }
    }
    return out;
  }

  /**
   * {@code GET /v1/tools/{tool}/expiry}: how many of {@code tool}'s settled entries (succeeded or
   * failed) the ledger keeps, and how many of them {@code window} would expire at once (completed
   * longer ago than it), on this instance and, unless {@code localOnly}, the others, asked for
   * {@code pathAndQuery}. A scan of each instance's active ledger store; the ledger must be
   * running.
   */
  ObjectNode expiry(
      String tool, Duration window, String pathAndQuery, String authorization, boolean localOnly) {
    Instant cutoff = Instant.now().minus(window);
    long settled = 0;
    long expiring = 0;
    try (KeyValueIterator<String, LedgerEntry> all = ledger().all()) {
      while (all.hasNext()) {
        LedgerEntry entry = all.next().value;
        if (entry == null
            || !tool.equals(entry.getTool())
            || (entry.getState() != LedgerState.SUCCEEDED
                && entry.getState() != LedgerState.FAILED)) {
          continue;
        }
        settled++;
        if (entry.getCompletedAt() != null && !entry.getCompletedAt().isAfter(cutoff)) {
          expiring++;
        }
      }
    }
    ObjectNode out =
        JSON.createObjectNode()
            .put("tool", tool)
            .put("window", Durations.format(window))
            .put("settled", settled)
            .put("expiringAtOnce", expiring)
            .put("instances", 1);
    ArrayNode unreachable = JSON.createArrayNode();
    if (!localOnly) {
      // a scan of each instance's whole store: allow it longer than the console's views
      for (JsonNode counted :
          others(pathAndQuery, authorization, unreachable, Duration.ofSeconds(30))) {
        InstanceFanOut.mergeExpiry(out, counted);
      }
    }
    out.set("unreachable", unreachable);
    return out;
  }

  /**
   * {@code GET /v1/policy}: the tool policy version each ledger task of this instance applies (0:
   * the processor's own tools.yaml, no applied policy read yet), and the file it started with; null
   * when this processor does not read tool-policy.
   */
  ObjectNode policy() {
    LivePolicies tasks = livePolicies;
    if (tasks == null) {
      return null;
    }
    ObjectNode body = JSON.createObjectNode();
    body.put("started", tasks.seed().sha256());
    ObjectNode versions = body.putObject("tasks");
    tasks.versions().forEach(versions::put);
    return body;
  }

  /**
   * The other instance that owns {@code key} in the ledger store, or null when this one does or
   * Kafka Streams knows no owner (then this instance answers from its own store).
   */
  HostInfo remoteOwner(String key) {
    KeyQueryMetadata owner =
        streams.queryMetadataForKey(LedgerStore.NAME, key, Serdes.String().serializer());
    if (owner != null
        && owner != KeyQueryMetadata.NOT_AVAILABLE
        && !owner.activeHost().equals(self)) {
      return owner.activeHost();
    }
    return null;
  }

  /** {@code tenant}'s {@code key} in this instance's ledger store; null when it has none. */
  LedgerEntry local(String tenant, String key) {
    return ledger().get(LedgerStore.key(tenant, key));
  }

  /**
   * The ledger entry of {@code tenant}'s {@code key} as {@link LedgerEntryJson#describe} shows it
   * (result included), from the instance that owns it: null when there is none. Asked with the
   * caller's {@code authorization}.
   *
   * @throws IllegalStateException when the owner cannot be asked or the ledger is not running
   */
  ObjectNode entry(String tenant, String key, String authorization) {
    if (streams.state() != KafkaStreams.State.RUNNING) {
      throw new IllegalStateException("the ledger is not running (" + streams.state() + ")");
    }
    HostInfo owner = remoteOwner(key);
    if (owner != null) {
      try {
        HttpResponse<String> response =
            instances.askOwner(owner, "/v1/keys/", tenant, key, "?result=1", authorization);
        if (response.statusCode() == 404) {
          return null;
        }
        if (response.statusCode() != 200) {
          throw new IllegalStateException(
              "the instance that owns the key answered HTTP " + response.statusCode());
        }
        return (ObjectNode) JSON.readTree(response.body());
      } catch (IOException e) {
        throw new IllegalStateException(
            "the instance that owns the key ("
                + InstanceFanOut.address(owner)
                + ") cannot be reached");
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted");
      }
    }
    LedgerEntry entry = local(tenant, key);
    return entry == null ? null : LedgerEntryJson.describe(entry, true);
  }

  /** The answers of every other instance to {@code GET path} (see {@link InstanceFanOut#ask}). */
  private List<JsonNode> others(
      String path, String authorization, ArrayNode unreachable, Duration timeout) {
    List<HostInfo> all =
        streams.metadataForAllStreamsClients().stream().map(StreamsMetadata::hostInfo).toList();
    return instances.ask(all, self, path, authorization, unreachable, timeout);
  }

  private ReadOnlyKeyValueStore<String, LedgerEntry> ledger() {
    return streams.store(
        StoreQueryParameters.fromNameAndType(
            LedgerStore.NAME, QueryableStoreTypes.<String, LedgerEntry>keyValueStore()));
  }
}
