package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.embedded.CountingDownstream.Fault;
import dev.effectledger.schema.BypassApprovals;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.testkit.KafkaClusterExtension;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The doors the console opens, over plain HTTP against a real ledger: no endpoint answers without a
 * valid credential, a form without its CSRF token changes nothing, a viewer cannot settle, and the
 * ledger refuses unsigned, forged, expired and other-key bypass approvals (a replayed one runs
 * nothing more). Also the settling actions end to end: "look up again" finds the effect downstream,
 * "mark as not applied" releases the key with the operator audited.
 */
@Tag("integration")
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(120)
class ConsoleSecurityIT {

  @RegisterExtension
  static final KafkaClusterExtension kafka = KafkaClusterExtension.withBrokers(1);

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern CSRF = Pattern.compile("name=\"csrf\" value=\"([^\"]+)\"");

  @TempDir static Path dir;
  ConsolePipeline pipeline;
  final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

  @BeforeAll
  void start() throws Exception {
    pipeline = new ConsolePipeline(kafka.bootstrapServers(), "console-security-it", dir);
  }

  @AfterAll
  void stop() {
    if (pipeline != null) {
      pipeline.close();
    }
  }

  private URI url(String path) {
    return URI.create("http://127.0.0.1:" + pipeline.port() + path);
  }

  private HttpResponse<String> get(String path, String... headers) throws Exception {
    HttpRequest.Builder request = HttpRequest.newBuilder(url(path)).GET();
    for (int i = 0; i < headers.length; i += 2) {
      request.header(headers[i], headers[i + 1]);
    }
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private HttpResponse<String> post(String path, Map<String, String> form, String... headers)
      throws Exception {
    String body =
        form.entrySet().stream()
            .map(
                e ->
                    URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8)
                        + "="
                        + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8))
            .collect(Collectors.joining("&"));
    HttpRequest.Builder request =
        HttpRequest.newBuilder(url(path))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .POST(HttpRequest.BodyPublishers.ofString(body));
    for (int i = 0; i < headers.length; i += 2) {
      request.header(headers[i], headers[i + 1]);
    }
    return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  /** A signed-in session: its cookie header value and its CSRF token. */
  private record Session(String cookie, String csrf) {}

  private Session signIn(String token) throws Exception {
    HttpResponse<String> form = get("/console/login");
    String nonce = cookie(form, "el_login");
    Matcher csrf = CSRF.matcher(form.body());
    assertThat(csrf.find()).isTrue();
    HttpResponse<String> signedIn =
        post(
            "/console/login",
            Map.of("csrf", csrf.group(1), "token", token),
            "Cookie",
            "el_login=" + nonce);
    assertThat(signedIn.statusCode()).as(signedIn.body()).isEqualTo(303);
    String session = "el_session=" + cookie(signedIn, "el_session");
    Matcher pageCsrf = CSRF.matcher(get("/console/keys", "Cookie", session).body());
    assertThat(pageCsrf.find()).isTrue();
    return new Session(session, pageCsrf.group(1));
  }

  private static String cookie(HttpResponse<String> response, String name) {
    return response.headers().allValues("Set-Cookie").stream()
        .filter(c -> c.startsWith(name + "="))
        .map(c -> c.substring(name.length() + 1, c.indexOf(';')))
        .findFirst()
        .orElseThrow(() -> new AssertionError("no " + name + " cookie: " + response.headers()));
  }

  /** A transfer held as UNKNOWN: the downstream acted, then answered 500. */
  private String heldTransfer(String step) throws Exception {
    String arguments = "{\"amount\":" + step.hashCode() + "}";
    String key = pipeline.keyOf("transfer", step, arguments);
    pipeline.risky.inject(key, Fault.ERROR_AFTER_EFFECT);
    assertThat(pipeline.call("transfer", step, arguments, null).getStatus())
        .isEqualTo(ResultStatus.UNKNOWN);
    return key;
  }

  private String state(String key) throws Exception {
    HttpResponse<String> entry =
        get(
            "/v1/keys/acme/" + URLEncoder.encode(key, StandardCharsets.UTF_8),
            "Authorization",
            "Bearer " + ConsolePipeline.VIEWER_TOKEN);
    return entry.statusCode() == 404 ? "NONE" : JSON.readTree(entry.body()).get("state").asText();
  }

  private void awaitState(String key, String expected) {
    await("the ledger's entry of " + key + " is " + expected)
        .atMost(Duration.ofSeconds(20))
        .untilAsserted(() -> assertThat(state(key)).as("state of %s", key).isEqualTo(expected));
  }

  @Test
  void shouldRefuseEveryEndpointWithoutOrWithAWrongCredential() throws Exception {
    List<String> api =
        List.of(
            "/v1/keys/acme/k",
            "/v1/results/acme/k",
            "/v1/tools/transfer/expiry?window=1d",
            "/v1/policy",
            "/v1/held",
            "/v1/overview");
    for (String path : api) {
      assertThat(get(path).statusCode()).as(path).isEqualTo(401);
      assertThat(get(path, "Authorization", "Bearer wrong").statusCode()).as(path).isEqualTo(401);
      assertThat(get(path, "Authorization", "Bearer " + ConsolePipeline.VIEWER_TOKEN).statusCode())
          .as(path)
          .isNotEqualTo(401);
    }
    for (String page : List.of("/console", "/console/held", "/console/keys?tenant=a&key=b")) {
      HttpResponse<String> anonymous = get(page);
      assertThat(anonymous.statusCode()).as(page).isEqualTo(303);
      assertThat(anonymous.headers().firstValue("Location")).contains("/console/login");
      assertThat(get(page, "Cookie", "el_session=forged").statusCode()).as(page).isEqualTo(303);
      // a bearer token is not a console session
      assertThat(
              get(page, "Authorization", "Bearer " + ConsolePipeline.OPERATOR_TOKEN).statusCode())
          .isEqualTo(303);
    }
    assertThat(get("/console/api/overview").statusCode()).isEqualTo(401);
    for (String action :
        List.of(
            "/console/actions/applied",
            "/console/actions/released",
            "/console/actions/lookup",
            "/console/actions/approve")) {
      assertThat(post(action, Map.of("tenant", "acme", "key", "k")).statusCode())
          .as(action)
          .isEqualTo(401);
    }
    // A wrong token does not sign in; a sign-in form posted without its nonce cookie is refused.
    HttpResponse<String> form = get("/console/login");
    Matcher csrf = CSRF.matcher(form.body());
    assertThat(csrf.find()).isTrue();
    HttpResponse<String> wrong =
        post(
            "/console/login",
            Map.of("csrf", csrf.group(1), "token", "guess"),
            "Cookie",
            "el_login=" + cookie(form, "el_login"));
    assertThat(wrong.statusCode()).isEqualTo(401);
    assertThat(wrong.headers().allValues("Set-Cookie")).noneMatch(c -> c.startsWith("el_session"));
    assertThat(
            post(
                    "/console/login",
                    Map.of("csrf", csrf.group(1), "token", ConsolePipeline.OPERATOR_TOKEN))
                .statusCode())
        .isEqualTo(403);
    // Probes stay open, as configured (http.auth.metrics=false).
    assertThat(get("/healthz").statusCode()).isEqualTo(200);
    assertThat(get("/metrics").statusCode()).isEqualTo(200);
  }

  @Test
  void shouldChangeNothingForAFormWithoutItsCsrfTokenOrFromAViewer() throws Exception {
    String key = heldTransfer("csrf");
    Session operator = signIn(ConsolePipeline.OPERATOR_TOKEN);
    Map<String, String> fields = new LinkedHashMap<>();
    fields.put("tenant", "acme");
    fields.put("key", key);
    fields.put("effectId", "tr_forged");
    assertThat(post("/console/actions/applied", fields, "Cookie", operator.cookie()).statusCode())
        .isEqualTo(403);
    fields.put("csrf", "not-the-token");
    assertThat(post("/console/actions/applied", fields, "Cookie", operator.cookie()).statusCode())
        .isEqualTo(403);

    Session viewer = signIn(ConsolePipeline.VIEWER_TOKEN);
    fields.put("csrf", viewer.csrf());
    HttpResponse<String> refused =
        post("/console/actions/applied", fields, "Cookie", viewer.cookie());
    assertThat(refused.statusCode()).isEqualTo(403);
    assertThat(refused.body()).contains("victor is a viewer");
    // another session's token is not this one's
    fields.put("csrf", viewer.csrf());
    assertThat(post("/console/actions/applied", fields, "Cookie", operator.cookie()).statusCode())
        .isEqualTo(403);
    // the viewer's page offers no actions at all
    assertThat(
            get(
                    "/console/keys?tenant=acme&key="
                        + URLEncoder.encode(key, StandardCharsets.UTF_8),
                    "Cookie",
                    viewer.cookie())
                .body())
        .doesNotContain("mark-applied");

    assertThat(get("/console/held", "Cookie", viewer.cookie()).body())
        .contains(key)
        .doesNotContain("/console/actions/");
    assertThat(get("/console/held", "Cookie", operator.cookie()).body())
        .contains("/console/actions/released");
    // No hook shows the ledger read past where a write of those posts would be (the valid post
    // below writes the same effect id): the key must stay UNKNOWN throughout the next 2 s.
    await("the refused posts change nothing: " + key + " stays UNKNOWN, for 2 s")
        .during(Duration.ofSeconds(2))
        .atMost(Duration.ofSeconds(5))
        .untilAsserted(() -> assertThat(state(key)).as("state of %s", key).isEqualTo("UNKNOWN"));

    // With the operator's own token, it acts.
    fields.put("csrf", operator.csrf());
    HttpResponse<String> applied =
        post("/console/actions/applied", fields, "Cookie", operator.cookie());
    assertThat(applied.statusCode()).isEqualTo(303);
    awaitState(key, "SUCCEEDED");
  }

  @Test
  void shouldSettleByLookingUpAgainAndReleaseWithTheOperatorAudited() throws Exception {
    Session operator = signIn(ConsolePipeline.OPERATOR_TOKEN);
    String found = heldTransfer("lookup");
    HttpResponse<String> lookedUp =
        post(
            "/console/actions/lookup",
            Map.of("tenant", "acme", "key", found, "csrf", operator.csrf()),
            "Cookie",
            operator.cookie());
    assertThat(lookedUp.statusCode()).isEqualTo(303);
    assertThat(URLDecode(lookedUp.headers().firstValue("Location").orElseThrow()))
        .contains("Marked as applied");
    awaitState(found, "SUCCEEDED");

    String released = heldTransfer("release");
    JsonNode heldList =
        JSON.readTree(
            get("/v1/held", "Authorization", "Bearer " + ConsolePipeline.VIEWER_TOKEN).body());
    assertThat(heldList.get("held").findValuesAsText("key"))
        .contains(released)
        .doesNotContain(found);
    assertThat(
            post(
                    "/console/actions/released",
                    Map.of("tenant", "acme", "key", released, "csrf", operator.csrf()),
                    "Cookie",
                    operator.cookie())
                .statusCode())
        .isEqualTo(303);
    awaitState(released, "NONE");
    // the audit event is readable once the ledger's transaction commits (the store shows sooner)
    await("the console's key page shows the operator's release of " + released)
        .atMost(Duration.ofSeconds(20))
        .untilAsserted(
            () ->
                assertThat(
                        get(
                                "/console/keys?tenant=acme&key="
                                    + URLEncoder.encode(released, StandardCharsets.UTF_8),
                                "Cookie",
                                operator.cookie())
                            .body())
                    .contains("RELEASED")
                    .contains("OPERATOR_RELEASED")
                    .contains("alice"));
    // Released: the agent's next call runs it again (this downstream ignores keys: a 2nd effect).
    ToolResult rerun =
        pipeline.call("transfer", "release", "{\"amount\":" + "release".hashCode() + "}", null);
    assertThat(rerun.getStatus()).isEqualTo(ResultStatus.SUCCEEDED);
    assertThat(pipeline.risky.effects(released)).isEqualTo(2);
  }

  @Test
  void shouldShowWhatTheReconcilerFoundAboutAHeldKeyUntilItIsSettled() throws Exception {
    String arguments = "{\"amount\":77}";
    String key = pipeline.keyOf("wire", "wire-1", arguments);
    pipeline.risky.inject(key, Fault.ERROR_AFTER_EFFECT);
    assertThat(pipeline.call("wire", "wire-1", arguments, null).getStatus())
        .isEqualTo(ResultStatus.UNKNOWN);
    Session operator = signIn(ConsolePipeline.OPERATOR_TOKEN);
    var connectors =
        dev.effectledger.connectors.Connectors.forLanes(
            pipeline.policies, List.of("risky"), java.time.Clock.systemUTC());
    try (var reconciler =
        new dev.effectledger.connectors.reconcile.Reconciler(
            pipeline.kafka(),
            pipeline.registry(),
            Map.of("wire", connectors.get("wire")),
            dev.effectledger.connectors.reconcile.Reconciler.lanesOf(pipeline.policies),
            Duration.ZERO,
            java.time.Clock.systemUTC())) {
      // The lookup cannot reach the downstream: the key stays held, and the console says why.
      reconciler.reconcileOnce();
      await("the console's held page shows the reconciler's UNAVAILABLE finding on " + key)
          .atMost(Duration.ofSeconds(20))
          .untilAsserted(
              () ->
                  assertThat(get("/console/held", "Cookie", operator.cookie()).body())
                      .contains(key)
                      .contains("UNAVAILABLE")
                      .contains("reconciler"));
      assertThat(state(key)).isEqualTo("UNKNOWN");

      // Settled by the operator: the reconciler's next pass withdraws its finding.
      post(
          "/console/actions/applied",
          Map.of("tenant", "acme", "key", key, "effectId", "wr_1", "csrf", operator.csrf()),
          "Cookie",
          operator.cookie());
      awaitState(key, "SUCCEEDED");
      await("the reconciler's next pass withdraws its finding on " + key)
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () -> {
                reconciler.reconcileOnce();
                assertThat(
                        get(
                                "/console/keys?tenant=acme&key="
                                    + URLEncoder.encode(key, StandardCharsets.UTF_8),
                                "Cookie",
                                operator.cookie())
                            .body())
                    .doesNotContain("UNAVAILABLE");
              });
    } finally {
      connectors.values().forEach(dev.effectledger.connectors.Connector::close);
    }
  }

  @Test
  void shouldRunAConsoleApprovalOnceThroughTheHttpGatewayAndRefuseAForgedOne() throws Exception {
    String agentToken = "agent-token";
    try (var gateway =
        dev.effectledger.gateway.Gateway.start(
            dev.effectledger.gateway.GatewayConfig.of(
                    "gw-console",
                    pipeline.kafka(),
                    pipeline.registry(),
                    url(""),
                    pipeline.policies,
                    dev.effectledger.gateway.Credentials.of(
                        Map.of(
                            dev.effectledger.gateway.Credentials.sha256Hex(agentToken),
                            new dev.effectledger.gateway.Credentials.Caller(
                                "agents", "acme", java.util.Set.of()))))
                .withWaits(Duration.ofSeconds(20), Duration.ofSeconds(30))
                .withReplyTopic(4, (short) 1)
                .withLedgerToken(ConsolePipeline.VIEWER_TOKEN))) {
      String call =
          "{\"arguments\":{\"to\":\"gw@example.com\",\"text\":\"z\"},"
              + "\"step\":{\"run\":\"run-gw\",\"step\":\"mail\"}";
      java.util.function.Function<String, HttpResponse<String>> post =
          body -> {
            try {
              return http.send(
                  HttpRequest.newBuilder(gateway.uri().resolve("/v1/tools/send_email/calls"))
                      .timeout(Duration.ofSeconds(60))
                      .header("Authorization", "Bearer " + agentToken)
                      .header("Content-Type", "application/json")
                      .POST(HttpRequest.BodyPublishers.ofString(body))
                      .build(),
                  HttpResponse.BodyHandlers.ofString());
            } catch (Exception e) {
              throw new IllegalStateException(e);
            }
          };
      // the gateway takes calls once it has seen the ledger ready (it probes every second)
      await("gateway gw-console's /readyz answers 200")
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () -> {
                HttpResponse<String> ready =
                    http.send(
                        HttpRequest.newBuilder(gateway.uri().resolve("/readyz")).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(ready.statusCode())
                    .as("gw-console's /readyz (%s)", ready.body().strip())
                    .isEqualTo(200);
              });
      HttpResponse<String> first = post.apply(call + "}");
      assertThat(first.statusCode()).as(first.body()).isEqualTo(200);
      String key = JSON.readTree(first.body()).get("key").asText();

      // The operator signs an approval for that key in the console.
      Session operator = signIn(ConsolePipeline.OPERATOR_TOKEN);
      HttpResponse<String> page =
          post(
              "/console/actions/approve",
              Map.of(
                  "tenant",
                  "acme",
                  "key",
                  key,
                  "reason",
                  "INC-9",
                  "expires",
                  "15m",
                  "csrf",
                  operator.csrf()),
              "Cookie",
              operator.cookie());
      Matcher minted = Pattern.compile("<pre id=\"approval\">([^<]+)</pre>").matcher(page.body());
      assertThat(minted.find()).as(page.body()).isTrue();
      String approval = minted.group(1).trim();

      HttpResponse<String> forged =
          post.apply(
              call
                  + ",\"bypassApproval\":\""
                  + approval.substring(0, approval.length() - 4)
                  + "AAAA\"}");
      assertThat(forged.statusCode()).as(forged.body()).isEqualTo(403);
      assertThat(forged.body()).contains("bypass-approval-invalid");
      HttpResponse<String> again = post.apply(call + ",\"bypassApproval\":\"" + approval + "\"}");
      assertThat(again.statusCode()).as(again.body()).isEqualTo(200);
      HttpResponse<String> retried = post.apply(call + ",\"bypassApproval\":\"" + approval + "\"}");
      assertThat(retried.statusCode()).isEqualTo(200);
      assertThat(retried.headers().firstValue("Idempotent-Replayed")).contains("true");
      assertThat(pipeline.payments.effects(key)).isEqualTo(1);
      assertThat(
              pipeline.payments.effectsByKey().entrySet().stream()
                  .filter(e -> e.getKey().startsWith(key + "~bypass-"))
                  .mapToLong(Map.Entry::getValue)
                  .sum())
          .isEqualTo(1);
    }
  }

  private static String URLDecode(String value) {
    return java.net.URLDecoder.decode(value, StandardCharsets.UTF_8);
  }

  @Test
  void shouldRefuseUnsignedForgedExpiredAndOtherKeyApprovalsAndRunAReplayedOneNoMore()
      throws Exception {
    String email = "{\"to\":\"sec@example.com\",\"text\":\"x\"}";
    String other = "{\"to\":\"other@example.com\",\"text\":\"y\"}";
    assertThat(pipeline.call("send_email", "sec", email, null).getStatus())
        .isEqualTo(ResultStatus.SUCCEEDED);
    assertThat(pipeline.call("send_email", "other", other, null).getStatus())
        .isEqualTo(ResultStatus.SUCCEEDED);
    String key = pipeline.keyOf("send_email", "sec", email);
    String otherKey = pipeline.keyOf("send_email", "other", other);
    Instant later = Instant.now().plus(Duration.ofHours(1));
    var forger = BypassApprovals.generate();
    Map<String, String> refused = new LinkedHashMap<>();
    refused.put("unsigned", "ops-ticket-42");
    refused.put(
        "forged",
        BypassApprovals.sign(
            new BypassApprovals.Approval("console", "acme", key, "mallory", "x", later),
            forger.getPrivate()));
    refused.put(
        "expired",
        BypassApprovals.sign(
            new BypassApprovals.Approval(
                "console", "acme", key, "alice", "x", Instant.now().minusSeconds(1)),
            pipeline.signer.getPrivate()));
    refused.put(
        "other key",
        BypassApprovals.sign(
            new BypassApprovals.Approval("console", "acme", otherKey, "alice", "x", later),
            pipeline.signer.getPrivate()));
    String valid =
        BypassApprovals.sign(
            new BypassApprovals.Approval("console", "acme", key, "alice", "x", later),
            pipeline.signer.getPrivate());
    String signature = valid.substring(valid.lastIndexOf('.') + 1);
    refused.put(
        "altered",
        valid.substring(0, valid.lastIndexOf('.') - 2)
            + (valid.charAt(valid.lastIndexOf('.') - 2) == 'A' ? "B" : "A")
            + valid.charAt(valid.lastIndexOf('.') - 1)
            + "."
            + signature);
    for (Map.Entry<String, String> approval : refused.entrySet()) {
      ToolResult answer = pipeline.call("send_email", "sec", email, approval.getValue());
      assertThat(answer.getStatus()).as(approval.getKey()).isEqualTo(ResultStatus.REJECTED);
      assertThat(answer.getError().getCode())
          .as(approval.getKey())
          .isEqualTo("BYPASS_APPROVAL_INVALID");
    }
    assertThat(pipeline.payments.effects(key)).isEqualTo(1);

    assertThat(pipeline.call("send_email", "sec", email, valid).getStatus())
        .isEqualTo(ResultStatus.SUCCEEDED);
    ToolResult replayed = pipeline.call("send_email", "sec", email, valid);
    assertThat(replayed.getReplayed()).isTrue();
    long bypassEffects =
        pipeline.payments.effectsByKey().entrySet().stream()
            .filter(e -> e.getKey().startsWith(key + "~bypass-"))
            .mapToLong(Map.Entry::getValue)
            .sum();
    assertThat(bypassEffects).isEqualTo(1);
    assertThat(pipeline.payments.effects(key)).isEqualTo(1);
  }
}
