package dev.effectledger.app.console;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ConsolePagesTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void shouldShowWhoIsSignedInAndTheirCsrfTokenOnEveryPage() {
    ConsoleSessions.Session session =
        new ConsoleSessions.Session(
            "id",
            new HttpAuth.Identity("bob", HttpAuth.Role.VIEWER),
            "bob-token",
            "csrf-1",
            Instant.EPOCH);

    Map<String, Object> page =
        ConsolePages.page(new ConsoleGuard.Caller(session.who(), session), "Held keys");

    assertThat(page)
        .containsEntry("title", "Held keys")
        .containsEntry("user", "bob")
        .containsEntry("role", "viewer")
        .containsEntry("operator", false)
        .containsEntry("csrf", "csrf-1")
        .containsEntry("signedIn", true)
        .doesNotContainValue("bob-token");
  }

  @Test
  @SuppressWarnings("unchecked")
  void shouldSumTheDuplicateDecisionsAndShowMissingPercentilesAsADash() throws Exception {
    JsonNode data =
        JSON.readTree(
            """
            {"tools":{"charge_card":{"decisions":{"dispatched":9,"dedup_hit":3,"in_flight":2,
                                                  "refused_in_flight":1,"conflict":4,"failed":5},
                                     "inFlight":6,"held":7,"p50Ms":12.4,"p99Ms":250.6},
                      "send_email":{"decisions":{"dispatched":1}}},
             "instances":2,"counting":true,"unreachable":["10.0.0.9:8080 (HTTP 401)"],
             "executors":[{"url":"http://x:9100","status":"up","ready":true,"effects":8,
                           "inFlight":1,"retries":2}],
             "doubleEffects":[{"tool":"charge_card","tenant":"acme co","key":"k/1",
                               "firstEffectId":"ch_1","secondEffectId":"ch_2"}]}
            """);
    Map<String, Object> page = new HashMap<>();

    ConsolePages.overviewModel(page, data);

    List<Map<String, Object>> tools = (List<Map<String, Object>>) page.get("tools");
    assertThat(tools).hasSize(2);
    assertThat(tools.get(0))
        .containsEntry("tool", "charge_card")
        .containsEntry("firstSights", 9L)
        .containsEntry("duplicates", 6L)
        .containsEntry("conflicts", 4L)
        .containsEntry("failed", 5L)
        .containsEntry("inFlight", 6L)
        .containsEntry("held", 7L)
        .containsEntry("p50", "12 ms")
        .containsEntry("p99", "251 ms");
    assertThat(tools.get(1))
        .containsEntry("tool", "send_email")
        .containsEntry("duplicates", 0L)
        .containsEntry("p50", "-")
        .containsEntry("p99", "-");
    assertThat(page)
        .containsEntry("instances", 2)
        .containsEntry("counting", true)
        .containsEntry("unreachable", List.of("10.0.0.9:8080 (HTTP 401)"))
        .containsEntry("hasDoubleEffects", true);
    assertThat((List<Map<String, Object>>) page.get("executorRows"))
        .singleElement()
        .satisfies(
            row ->
                assertThat(row)
                    .containsEntry("url", "http://x:9100")
                    .containsEntry("ready", true)
                    .containsEntry("effects", 8L)
                    .containsEntry("retries", 2L));
    assertThat((List<Map<String, Object>>) page.get("doubleEffects"))
        .singleElement()
        .satisfies(
            row ->
                assertThat(row)
                    .containsEntry("first", "ch_1")
                    .containsEntry("second", "ch_2")
                    .containsEntry("href", "/console/keys?tenant=acme+co&key=k%2F1"));
  }

  @Test
  void shouldSayThereAreNoDoubleEffectsWhenNoInstanceSawAny() throws Exception {
    Map<String, Object> page = new HashMap<>();

    ConsolePages.overviewModel(page, JSON.readTree("{\"tools\":{},\"instances\":1}"));

    assertThat(page)
        .containsEntry("hasDoubleEffects", false)
        .containsEntry("tools", List.of())
        .containsEntry("unreachable", List.of());
  }

  @Test
  @SuppressWarnings("unchecked")
  void shouldShowEachHeldKeysAgeSinceItsLastDispatchAndItsFinding() throws Exception {
    JsonNode data =
        JSON.readTree(
            """
            {"held":[{"tenant":"acme","key":"k 1","tool":"charge_card","attempts":3,
                      "lastDispatchedAt":"2026-01-01T00:00:00Z",
                      "error":"OUTCOME_UNKNOWN","errorMessage":"executor crashed"},
                     {"tenant":"beta","key":"k2","tool":"send_email","attempts":1,
                      "lastDispatchedAt":"2026-01-01T01:59:30.900Z"}],
             "instances":2,"counting":false,"unreachable":[]}
            """);
    Map<String, Object> page = new HashMap<>();

    ConsolePages.heldModel(
        page,
        data,
        Instant.parse("2026-01-01T02:00:00Z"),
        (tenant, key) -> tenant.equals("acme") ? "charged once: ch_1" : null);

    List<Map<String, Object>> rows = (List<Map<String, Object>>) page.get("held");
    assertThat(rows).hasSize(2);
    assertThat(rows.get(0))
        .containsEntry("href", "/console/keys?tenant=acme&key=k+1")
        .containsEntry("attempts", 3)
        .containsEntry("age", "2h")
        .containsEntry("error", "OUTCOME_UNKNOWN")
        .containsEntry("errorMessage", "executor crashed")
        .containsEntry("finding", "charged once: ch_1");
    assertThat(rows.get(1))
        .as("the age in whole seconds")
        .containsEntry("age", "29s")
        .containsEntry("error", "")
        .containsEntry("finding", null);
    assertThat(page).containsEntry("count", 2).containsEntry("instances", 2);
  }
}
