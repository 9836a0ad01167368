package dev.effectledger.connectors.log;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.connectors.Capabilities;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;

/**
 * Appends one JSON line per effect to a file; for demos. It neither dedups nor is transactional, so
 * a redelivered dispatch appends again: never configure it for an irreversible tool.
 */
public final class LogConnector implements Connector {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Path file;
  private final Clock clock;

  public LogConnector(Path file, Clock clock) {
    this.file = file;
    this.clock = clock;
  }

  @Override
  public Capabilities capabilities() {
    return new Capabilities(false, false, false);
  }

  @Override
  public EffectOutcome execute(EffectRequest request) {
    ObjectNode line =
        JSON.createObjectNode()
            .put("key", request.effectKey())
            .put("tenant", request.tenant())
            .put("tool", request.tool())
            .put("at", clock.instant().toString());
    try {
      line.set("arguments", JSON.readTree(request.arguments()));
      synchronized (this) {
        Files.writeString(
            file,
            line + "\n",
            StandardCharsets.UTF_8,
            StandardOpenOption.CREATE,
            StandardOpenOption.APPEND);
      }
    } catch (IOException e) {
      return new EffectOutcome.Retryable(
          "LOG_WRITE_FAILED", "could not append to " + file + ": " + e.getMessage());
    }
    return new EffectOutcome.Succeeded("{\"logged\":true}", null);
  }
}
