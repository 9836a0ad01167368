package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.policy.ToolPolicies;
import dev.effectledger.policy.ToolPolicyLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * docker-compose.yml cannot be started here (no Docker engine), so its wiring is checked: every
 * config path it names exists in the repository, the ports agree with the config files, and the
 * files themselves load.
 */
class ComposeFileTest {

  private static final Path REPO = Path.of("..");
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

  private List<String> command(String service) {
    List<String> out = new ArrayList<>();
    compose.path("services").path(service).path("command").forEach(n -> out.add(n.asText()));
    return out;
  }

  @Test
  void shouldNameOnlyConfigFilesThatExistAndLoad() throws Exception {
    for (String service : List.of("processor", "executor")) {
      List<String> command = command(service);
      Path config = inRepo(command.get(command.indexOf("--config") + 1));
      assertThat(config).as("%s config", service).exists();
      AppConfig app = AppConfig.load(config, Map.of());
      Path tools = inRepo(app.get(AppConfig.TOOLS_FILE));
      ToolPolicies policies = new ToolPolicyLoader().load(tools);
      assertThat(Connectors.check(policies)).as("%s tools", service).isEmpty();
      assertThat(app.get("bootstrap.servers")).isEqualTo("kafka:9092");
      assertThat(app.get(AppConfig.SCHEMA_REGISTRY_URL)).isEqualTo("http://schema-registry:8081");
    }
    compose
        .path("services")
        .forEach(
            s ->
                s.path("volumes")
                    .forEach(
                        v ->
                            assertThat(REPO.resolve(v.asText().split(":")[0]))
                                .as("volume %s", v.asText())
                                .exists()));
  }

  @Test
  void shouldPublishThePortsTheConfigsUse() throws Exception {
    AppConfig processor =
        AppConfig.load(inRepo("/app/config/docker/processor.properties"), Map.of());
    String port = processor.get(AppConfig.HTTP_PORT);

    assertThat(compose.path("services").path("processor").path("ports").get(0).asText())
        .isEqualTo(port + ":" + port);
    assertThat(command("downstream")).containsSubsequence("--port", "8090");
    assertThat(Files.readString(inRepo("/app/config/docker/tools.yaml")))
        .contains("http://downstream:8090/charges");
    List<String> lanes =
        List.of(command("executor").get(command("executor").indexOf("--lanes") + 1).split(","));
    ToolPolicies policies = new ToolPolicyLoader().load(inRepo("/app/config/docker/tools.yaml"));
    assertThat(policies.tools().values()).allSatisfy(p -> assertThat(lanes).contains(p.lane()));
  }

  @Test
  void shouldBuildImagesFromTheRepositoryDockerfile() {
    assertThat(REPO.resolve("Dockerfile")).exists();
    for (String service : List.of("processor", "executor", "downstream")) {
      assertThat(compose.path("services").path(service).path("build").asText()).isEqualTo(".");
    }
  }
}
