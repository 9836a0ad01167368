package dev.effectledger.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.schema.PolicyFeed;
import dev.effectledger.schema.Topics;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

/**
 * The key rules of the applied tool policy ({@code effectledger tools apply}), read from {@value
 * Topics#POLICY} ({@link PolicyFeed}) and kept current: so every client and gateway derives keys
 * with the rules the ledger checks them against, and a rules change reaches them without a restart.
 * Only the document's {@code keys} are read: each tool's current rules; the ledger itself honours
 * the earlier ones through their horizon.
 */
public final class LiveKeyRules implements AutoCloseable {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final PolicyFeed feed;
  private volatile Map<String, KeyRules> rules = Map.of();
  private volatile Map<String, String> classes = Map.of();
  private volatile long version;

  private LiveKeyRules(Properties kafka) {
    this.feed = PolicyFeed.start(kafka, this::read, "effectledger-live-key-rules");
  }

  /** Starts following tool-policy with {@code kafka}'s connection settings. */
  public static LiveKeyRules start(Properties kafka) {
    return new LiveKeyRules(kafka);
  }

  /**
   * Waits until what tool-policy held when this started has been read (or the topic is absent).
   *
   * @return false when {@code wait} passed first
   */
  public boolean awaitCurrent(Duration wait) throws InterruptedException {
    return feed.awaitCurrent(wait);
  }

  /** The applied policy's current rules for {@code tool}; empty when it names none. */
  public Optional<KeyRules> forTool(String tool) {
    return Optional.ofNullable(rules.get(tool));
  }

  /**
   * The applied policy's class of {@code tool} ({@code read}, {@code write-idempotent}, {@code
   * write-non-idempotent}, {@code irreversible}); empty when it names none, or before one is read.
   */
  public Optional<String> classOf(String tool) {
    return Optional.ofNullable(classes.get(tool));
  }

  /** The applied policy's version; 0 until one is read. */
  public long version() {
    return version;
  }

  private void read(byte[] document) {
    JsonNode root;
    try {
      root = JSON.readTree(document);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    long next = root.path("version").asLong();
    if (next <= version) {
      return;
    }
    Map<String, KeyRules> byTool = new HashMap<>();
    root.path("keys")
        .fields()
        .forEachRemaining(
            e -> {
              JsonNode current = e.getValue().path(0);
              byTool.put(
                  e.getKey(),
                  new KeyRules(strings(current.path("ignore")), strings(current.path("require"))));
            });
    Map<String, String> classOf = new HashMap<>();
    root.path("classes")
        .fields()
        .forEachRemaining(e -> classOf.put(e.getKey(), e.getValue().asText()));
    rules = Map.copyOf(byTool);
    classes = Map.copyOf(classOf);
    version = next;
  }

  private static List<String> strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    array.forEach(n -> out.add(n.asText()));
    return out;
  }

  @Override
  public void close() {
    feed.close();
  }
}
