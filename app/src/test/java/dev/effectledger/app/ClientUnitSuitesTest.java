package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.testkit.ClientSuites;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The Python and TypeScript clients' unit suites (the shared key vectors, canonicalization, the
 * step and the decorator or wrapper), run in the default build so that they are in the one test
 * command. Their integration suites run in {@link ClientsIT}.
 */
@Timeout(300)
class ClientUnitSuitesTest {

  @Test
  void shouldPassThePythonUnitSuite() throws Exception {
    ClientSuites.Run run = ClientSuites.python("tests", Map.of());

    assertThat(run.exit()).as(run.output()).isZero();
    assertThat(run.output()).contains("OK").doesNotContain("skipped");
  }

  @Test
  void shouldPassTheTypeScriptUnitSuite() throws Exception {
    ClientSuites.Run run = ClientSuites.npm("test:dist", Map.of());

    assertThat(run.exit()).as(run.output()).isZero();
    assertThat(run.output())
        .contains("# fail 0")
        .contains("# skipped 0")
        .doesNotContain("# pass 0");
  }
}
