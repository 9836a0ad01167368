package dev.effectledger.app;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** {@code effectledger status KEY}: a key's ledger entry, from a processor's HTTP endpoint. */
@Command(
    name = "status",
    mixinStandardHelpOptions = true,
    description =
        "Show a key's ledger entry (asks a processor's HTTP endpoint, which finds the owner). Exit 1 when unknown.")
final class StatusCommand implements Callable<Integer> {

  @Parameters(paramLabel = "KEY", description = "the idempotency key")
  String key;

  @Option(
      names = "--tenant",
      defaultValue = "default",
      description = "tenant of the key (default: ${DEFAULT-VALUE})")
  String tenant;

  @Option(
      names = "--url",
      defaultValue = "http://127.0.0.1:8080",
      description = "a processor's endpoint (default: ${DEFAULT-VALUE})")
  String url;

  @Option(
      names = "--token",
      description =
          "a token of the processors' http.auth.<name> (default: EFFECTLEDGER_TOKEN), when their API wants one")
  String token;

  @Override
  public Integer call() throws InterruptedException {
    URI uri =
        URI.create(
            url
                + "/v1/keys/"
                + URLEncoder.encode(tenant, StandardCharsets.UTF_8)
                + "/"
                + URLEncoder.encode(key, StandardCharsets.UTF_8));
    try {
      HttpResponse<String> response =
          HttpClient.newHttpClient()
              .send(
                  bearer(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)), token)
                      .GET()
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
      if (response.statusCode() == 404) {
        System.out.println("unknown: no ledger entry for key " + key + " of tenant " + tenant);
        return 1;
      }
      if (response.statusCode() == 401) {
        System.err.println(
            "effectledger: "
                + url
                + " wants a token: give --token or EFFECTLEDGER_TOKEN (one of its http.auth.<name>)");
        return 2;
      }
      if (response.statusCode() != 200) {
        System.err.println(
            "effectledger: " + url + " answered " + response.statusCode() + ": " + response.body());
        return 2;
      }
      System.out.println(response.body());
      return 0;
    } catch (IOException e) {
      System.err.println(
          "effectledger: cannot reach "
              + url
              + " ("
              + e.getMessage()
              + "); is a processor running? Pass --url.");
      return 2;
    }
  }

  /**
   * Adds {@code Authorization: Bearer} with {@code token}, or with {@code EFFECTLEDGER_TOKEN} when
   * {@code token} is null; nothing when neither is set. For the commands that call a processor.
   */
  static java.net.http.HttpRequest.Builder bearer(
      java.net.http.HttpRequest.Builder request, String token) {
    String value = token != null ? token : System.getenv("EFFECTLEDGER_TOKEN");
    if (value != null && !value.isBlank()) {
      request.header("Authorization", "Bearer " + value);
    }
    return request;
  }
}
