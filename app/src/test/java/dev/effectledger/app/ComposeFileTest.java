package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.gateway.GatewayConfig;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * docker-compose.yml cannot be started here (no Docker engine), so its wiring is checked: every
 * config path it names exists in the repository, the ports, listeners, healthchecks and volumes
 * agree with the config files, and the files themselves load.
 */
class ComposeFileTest {

  private static final Path REPO = Path.of("..");

  /** Services built from this repository's Dockerfile, each with its config file. */
  private static final List<String> OURS = List.of("processor", "executor", "gateway");

  private final JsonNode compose = read();

  private static JsonNode read() {
    try {
      return new ObjectMapper(new YAMLFactory())
          .readTree(REPO.resolve("docker-compose.yml").toFile());
    } catch (Exception e) {
      throw new AssertionError("docker-compose.yml does not parse", e);
    }
  }

  /** /app/config/... inside the containers is ./config/... in the repository. */
  private static Path inRepo(String containerPath) {
    assertThat(containerPath).startsWith("/app/config/");
    return REPO.resolve("config").resolve(containerPath.substring("/app/config/".length()));
  }

  private JsonNode service(String name) {
    JsonNode service = compose.path("services").path(name);
    assertThat(service.isMissingNode()).as("service %s", name).isFalse();
    return service;
  }

  private List<String> command(String service) {
    List<String> out = new ArrayList<>();
    service(service).path("command").forEach(n -> out.add(n.asText()));
    return out;
  }

  private AppConfig config(String service) throws Exception {
    List<String> command = command(service);
    Path config = inRepo(command.get(command.indexOf("--config") + 1));
    assertThat(config).as("%s config", service).exists();
    return AppConfig.load(config, Map.of());
  }

  /** "127.0.0.1:8080:8080" or "8080:8080": the container port by the host port. */
  private Map<Integer, Integer> published(String service) {
    Map<Integer, Integer> ports = new HashMap<>();
    service(service)
        .path("ports")
        .forEach(
            p -> {
              String[] parts = p.asText().split(":");
              ports.put(
                  Integer.parseInt(parts[parts.length - 2]),
                  Integer.parseInt(parts[parts.length - 1]));
            });
    return ports;
  }

  /** The port a service's healthcheck asks on localhost, from its curl URL. */
  private int healthcheckPort(String service, String path) {
    List<String> test = new ArrayList<>();
    service(service).path("healthcheck").path("test").forEach(n -> test.add(n.asText()));
    String url = test.get(test.size() - 1);
    URI uri = URI.create(url);
    assertThat(uri.getHost()).as("%s healthcheck %s", service, test).isEqualTo("localhost");
    assertThat(uri.getPath()).as("%s healthcheck", service).isEqualTo(path);
    return uri.getPort();
  }

  /** A listener's host and port; the host is empty where it binds every interface. */
  private record Listener(String host, int port) {}

  /** "INTERNAL://kafka:9092,HOST://:29092" by listener name. */
  private Map<String, Listener> listeners(String variable) {
    Map<String, Listener> out = new HashMap<>();
    for (String listener :
        service("kafka").path("environment").path(variable).asText().split(",")) {
      String name = listener.substring(0, listener.indexOf("://"));
      String address = listener.substring(name.length() + 3);
      int colon = address.lastIndexOf(':');
      out.put(
          name,
          new Listener(
              address.substring(0, colon), Integer.parseInt(address.substring(colon + 1))));
    }
    return out;
  }

  @Test
  void shouldNameOnlyConfigFilesThatExistAndLoad() throws Exception {
    for (String service : OURS) {
      AppConfig app = config(service);
      Path tools = inRepo(app.get(AppConfig.TOOLS_FILE));
      ToolPolicies policies = new ToolPolicyLoader().load(tools);
      assertThat(Connectors.check(policies)).as("%s tools", service).isEmpty();
      assertThat(app.get("bootstrap.servers")).isEqualTo("kafka:9092");
      assertThat(app.get(AppConfig.SCHEMA_REGISTRY_URL)).isEqualTo("http://schema-registry:8081");
    }
    JsonNode named = compose.path("volumes");
    compose
        .path("services")
        .forEach(
            s ->
                s.path("volumes")
                    .forEach(
                        v -> {
                          String source = v.asText().split(":")[0];
                          if (source.startsWith(".")) {
                            assertThat(REPO.resolve(source)).as("volume %s", v.asText()).exists();
                          } else {
                            assertThat(named.has(source))
                                .as("named volume %s is declared", source)
                                .isTrue();
                          }
                        }));
  }

  @Test
  void shouldPublishThePortsTheConfigsUse() throws Exception {
    String port = config("processor").get(AppConfig.HTTP_PORT);

    assertThat(published("processor"))
        .containsEntry(Integer.parseInt(port), Integer.parseInt(port));
    assertThat(command("downstream")).containsSubsequence("--port", "8090");
    assertThat(Files.readString(inRepo("/app/config/docker/tools.yaml")))
        .contains("http://downstream:8090/charges");
    List<String> lanes =
        List.of(command("executor").get(command("executor").indexOf("--lanes") + 1).split(","));
    ToolPolicies policies = new ToolPolicyLoader().load(inRepo("/app/config/docker/tools.yaml"));
    assertThat(policies.tools().values()).allSatisfy(p -> assertThat(lanes).contains(p.lane()));
  }

  @Test
  void shouldRunTheGatewayAgainstTheProcessorAndPublishItOnTheHost() throws Exception {
    AppConfig gateway = config("gateway");
    GatewayConfig parsed =
        GatewayCommand.gatewayConfig(
            gateway, new ToolPolicyLoader().load(inRepo(gateway.get(AppConfig.TOOLS_FILE))));

    assertThat(parsed.host()).as("listens beyond the container's loopback").isEqualTo("0.0.0.0");
    assertThat(published("gateway")).containsEntry(parsed.port(), parsed.port());
    assertThat(parsed.ledgerUrl().getHost()).isEqualTo("processor");
    assertThat(parsed.ledgerUrl().getPort())
        .isEqualTo(config("processor").getInt(AppConfig.HTTP_PORT, -1));
    assertThat(parsed.replyReplication()).as("one broker").isEqualTo((short) 1);
    assertThat(service("gateway").path("depends_on").path("processor").path("condition").asText())
        .isEqualTo("service_healthy");
  }

  @Test
  void shouldGiveEveryServiceARestartPolicyAndAHealthcheckOnItsOwnPort() throws Exception {
    compose
        .path("services")
        .fields()
        .forEachRemaining(
            s -> {
              assertThat(s.getValue().path("restart").asText())
                  .as("%s restart policy", s.getKey())
                  .isIn("always", "unless-stopped", "on-failure");
              assertThat(s.getValue().path("healthcheck").path("test").size())
                  .as("%s healthcheck", s.getKey())
                  .isPositive();
              s.getValue()
                  .path("depends_on")
                  .fields()
                  .forEachRemaining(
                      d ->
                          assertThat(d.getValue().path("condition").asText())
                              .as("%s waits for %s to be healthy", s.getKey(), d.getKey())
                              .isEqualTo("service_healthy"));
            });
    assertThat(healthcheckPort("processor", "/readyz"))
        .isEqualTo(config("processor").getInt(AppConfig.HTTP_PORT, -1));
    assertThat(config("processor").get(AppConfig.HTTP_HOST)).isEqualTo("0.0.0.0");
    assertThat(healthcheckPort("executor", "/readyz"))
        .isEqualTo(config("executor").getInt(AppConfig.EXECUTOR_HTTP_PORT, -1));
    assertThat(healthcheckPort("gateway", "/readyz"))
        .isEqualTo(config("gateway").getInt(GatewayCommand.PORT, -1));
    assertThat(healthcheckPort("downstream", "/inflight"))
        .isEqualTo(
            Integer.parseInt(
                command("downstream").get(command("downstream").indexOf("--port") + 1)));
    assertThat(Files.readString(REPO.resolve("Dockerfile")))
        .as("our healthchecks run curl in our image")
        .containsPattern("apt-get install [^\\n]*curl");
  }

  @Test
  void shouldAdvertiseABrokerListenerTheHostReachesAtTheDefaultBootstrapServers() throws Exception {
    Map<String, Listener> bound = listeners("KAFKA_LISTENERS");
    Map<String, Listener> advertised = listeners("KAFKA_ADVERTISED_LISTENERS");

    Listener internal =
        advertised.get(
            service("kafka").path("environment").path("KAFKA_INTER_BROKER_LISTENER_NAME").asText());
    assertThat(internal.host() + ":" + internal.port())
        .as("what the containers use")
        .isEqualTo(config("processor").get("bootstrap.servers"));
    Listener host =
        advertised.values().stream()
            .filter(u -> u.host().equals("127.0.0.1"))
            .findFirst()
            .orElseThrow(() -> new AssertionError("no listener advertised as 127.0.0.1"));
    String name =
        advertised.entrySet().stream()
            .filter(e -> e.getValue().equals(host))
            .findFirst()
            .orElseThrow()
            .getKey();
    assertThat(published("kafka"))
        .as("the host's port %s reaches listener %s", host.port(), name)
        .containsEntry(host.port(), bound.get(name).port());
    for (String hostConfig : List.of("processor", "executor", "gateway")) {
      assertThat(
              AppConfig.load(REPO.resolve("config/" + hostConfig + ".properties"), Map.of())
                  .get("bootstrap.servers"))
          .as("config/%s.properties reaches the compose broker from the host", hostConfig)
          .isEqualTo("127.0.0.1:" + host.port());
    }
  }

  @Test
  void shouldKeepTheProcessorStateOnANamedVolume() throws Exception {
    String stateDir = config("processor").get("state.dir");
    List<String> mounts = new ArrayList<>();
    service("processor").path("volumes").forEach(v -> mounts.add(v.asText()));

    assertThat(mounts)
        .anySatisfy(
            m -> {
              String[] parts = m.split(":");
              assertThat(parts[1]).isEqualTo(stateDir);
              assertThat(compose.path("volumes").has(parts[0])).isTrue();
            });
  }

  @Test
  void shouldBuildImagesFromTheRepositoryDockerfile() {
    assertThat(REPO.resolve("Dockerfile")).exists();
    for (String service : List.of("processor", "executor", "gateway", "downstream")) {
      assertThat(service(service).path("build").asText()).isEqualTo(".");
    }
  }
}
