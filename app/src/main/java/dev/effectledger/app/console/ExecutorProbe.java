package dev.effectledger.app.console;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * What the console shows of one executor ({@code console.executors}): its {@code /readyz}, and the
 * totals of three of its metrics read from its {@code /metrics} (effects, effects in flight,
 * retries, summed over their labels).
 *
 * <p>The Prometheus text is read by hand, line by line (a metric's name, then its value as the last
 * field): only three of our own series are read, and no parser of the text format is on the class
 * path (Micrometer and the Prometheus client write it; neither reads it).
 */
final class ExecutorProbe {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Duration TIMEOUT = Duration.ofSeconds(2);

  /** An executor's totals, from its /metrics text. */
  record Totals(long effects, long inFlight, long retries) {}

  private final HttpClient http =
      HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  /** One row: {@code url}, {@code ready}, {@code status}, and the totals when it answered. */
  ObjectNode probe(String url) {
    ObjectNode row = JSON.createObjectNode().put("url", url);
    try {
      HttpResponse<String> ready = get(url + "/readyz");
      row.put("ready", ready.statusCode() == 200);
      row.put("status", ready.statusCode() == 200 ? "ready" : ready.body().trim());
      Totals totals = totals(get(url + "/metrics").body());
      row.put("effects", totals.effects());
      row.put("inFlight", totals.inFlight());
      row.put("retries", totals.retries());
    } catch (IOException | RuntimeException e) {
      row.put("ready", false);
      row.put("status", "unreachable: " + e.getClass().getSimpleName());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      row.put("ready", false).put("status", "interrupted");
    }
    return row;
  }

  /** The three totals of a /metrics text; a line that is not a sample is skipped. */
  static Totals totals(String metrics) {
    long effects = 0;
    long inFlight = 0;
    long retries = 0;
    for (String line : metrics.split("\n")) {
      if (line.startsWith("#") || line.isBlank()) {
        continue;
      }
      double value;
      try {
        value = Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      } catch (NumberFormatException e) {
        continue;
      }
      if (line.startsWith("effectledger_executor_effects_total")) {
        effects += (long) value;
      } else if (line.startsWith("effectledger_executor_in_flight")) {
        inFlight += (long) value;
      } else if (line.startsWith("effectledger_executor_retries_total")) {
        retries += (long) value;
      }
    }
    return new Totals(effects, inFlight, retries);
  }

  private HttpResponse<String> get(String url) throws IOException, InterruptedException {
    return http.send(
        HttpRequest.newBuilder(URI.create(url)).timeout(TIMEOUT).build(),
        HttpResponse.BodyHandlers.ofString());
  }
}
