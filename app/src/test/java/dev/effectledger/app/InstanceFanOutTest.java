package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.kafka.streams.state.HostInfo;
import org.junit.jupiter.api.Test;

class InstanceFanOutTest {

  private static final ObjectMapper JSON = new ObjectMapper();

  private static ObjectNode json(String text) throws Exception {
    return (ObjectNode) JSON.readTree(text);
  }

  @Test
  void shouldAddAnotherInstancesHeldKeysAndCountIt() throws Exception {
    ObjectNode out =
        json("{\"held\":[{\"key\":\"a\"}],\"counting\":false,\"instances\":1,\"unreachable\":[]}");

    InstanceFanOut.mergeHeld(out, json("{\"held\":[{\"key\":\"b\"},{\"key\":\"c\"}]}"));
    InstanceFanOut.mergeHeld(out, json("{\"held\":[],\"counting\":true}"));

    assertThat(out.path("held").findValuesAsText("key")).containsExactly("a", "b", "c");
    assertThat(out.path("counting").asBoolean()).as("one instance still counting").isTrue();
    assertThat(out.path("instances").asInt()).isEqualTo(3);
    assertThat(out.fieldNames())
        .toIterable()
        .as("the fields keep their places")
        .containsExactly("held", "counting", "instances", "unreachable");
  }

  @Test
  void shouldSumAnOverviewsCountsAndKeepTheHigherPercentiles() throws Exception {
    ObjectNode out =
        json(
            """
            {"tools":{"charge_card":{"decisions":{"dispatched":5,"dedup_hit":1},
                                     "p50Ms":12.0,"p99Ms":90.0,"inFlight":2,"held":1}},
             "counting":false,"instances":1,
             "doubleEffects":[{"key":"k1"}],"unreachable":[]}
            """);

    InstanceFanOut.mergeOverview(
        out,
        json(
            """
            {"tools":{"charge_card":{"decisions":{"dispatched":3,"conflict":2},
                                     "p50Ms":20.0,"inFlight":4,"held":0},
                      "send_email":{"decisions":{"dispatched":7}}},
             "counting":false,"instances":1,"doubleEffects":[{"key":"k2"}]}
            """));

    JsonNode card = out.path("tools").path("charge_card");
    assertThat(card.path("decisions").path("dispatched").asLong()).isEqualTo(8);
    assertThat(card.path("decisions").path("dedup_hit").asLong()).isEqualTo(1);
    assertThat(card.path("decisions").path("conflict").asLong()).isEqualTo(2);
    assertThat(card.path("inFlight").asLong()).isEqualTo(6);
    assertThat(card.path("held").asLong()).isEqualTo(1);
    assertThat(card.path("p50Ms").asDouble()).as("the higher instance's").isEqualTo(20.0);
    assertThat(card.path("p99Ms").asDouble()).as("kept when the other has none").isEqualTo(90.0);
    JsonNode email = out.path("tools").path("send_email");
    assertThat(email.path("decisions").path("dispatched").asLong()).isEqualTo(7);
    assertThat(email.path("inFlight").asLong()).isZero();
    assertThat(email.has("p50Ms")).as("no percentile made up").isFalse();
    assertThat(out.path("doubleEffects").findValuesAsText("key")).containsExactly("k1", "k2");
    assertThat(out.path("counting").asBoolean()).isFalse();
    assertThat(out.path("instances").asInt()).isEqualTo(2);
  }

  @Test
  void shouldAddAnotherInstancesExpiryCounts() throws Exception {
    ObjectNode out =
        json(
            "{\"tool\":\"t\",\"window\":\"7d\",\"settled\":10,\"expiringAtOnce\":4,"
                + "\"instances\":1}");

    InstanceFanOut.mergeExpiry(out, json("{\"settled\":5,\"expiringAtOnce\":5,\"instances\":1}"));

    assertThat(out.toString())
        .isEqualTo(
            "{\"tool\":\"t\",\"window\":\"7d\",\"settled\":15,\"expiringAtOnce\":9,"
                + "\"instances\":2}");
  }

  @Test
  void shouldAskEveryOtherInstanceAsForwardedAndListThoseThatCannotAnswer() throws Exception {
    List<String> seen = new CopyOnWriteArrayList<>();
    HttpServer answering = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    answering.createContext(
        "/v1/held",
        ex -> {
          seen.add(
              ex.getRequestHeaders().getFirst(InstanceFanOut.FORWARDED)
                  + " "
                  + ex.getRequestHeaders().getFirst("Authorization"));
          byte[] body = "{\"held\":[{\"key\":\"b\"}]}".getBytes(StandardCharsets.UTF_8);
          ex.sendResponseHeaders(200, body.length);
          try (var out = ex.getResponseBody()) {
            out.write(body);
          }
        });
    HttpServer refusing = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    refusing.createContext("/v1/held", ex -> ex.sendResponseHeaders(401, -1));
    int closedPort;
    try (ServerSocket socket = new ServerSocket(0)) {
      closedPort = socket.getLocalPort();
    }
    answering.start();
    refusing.start();
    try {
      HostInfo self = new HostInfo("127.0.0.1", 1);
      HostInfo up = new HostInfo("127.0.0.1", answering.getAddress().getPort());
      HostInfo denying = new HostInfo("127.0.0.1", refusing.getAddress().getPort());
      HostInfo down = new HostInfo("127.0.0.1", closedPort);
      ArrayNode unreachable = JSON.createArrayNode();

      List<JsonNode> answers =
          new InstanceFanOut()
              .ask(
                  List.of(self, up, new HostInfo("127.0.0.1", -1), denying, down),
                  self,
                  "/v1/held",
                  "Bearer t0ken",
                  unreachable,
                  Duration.ofSeconds(5));

      assertThat(answers).hasSize(1);
      assertThat(answers.get(0).path("held").findValuesAsText("key")).containsExactly("b");
      assertThat(seen)
          .as("asked once, as forwarded, with the caller's token")
          .containsExactly("1 Bearer t0ken");
      assertThat(unreachable)
          .extracting(JsonNode::asText)
          .containsExactly(
              "127.0.0.1:" + denying.port() + " (HTTP 401)", "127.0.0.1:" + closedPort);
    } finally {
      answering.stop(0);
      refusing.stop(0);
    }
  }
}
