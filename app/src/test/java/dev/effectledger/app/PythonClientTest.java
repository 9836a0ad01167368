package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The Python client's unit suite (clients/python/tests: the shared key vectors, canonicalization,
 * the step and the decorator), run with python3 in the default build so that it is in the one test
 * command.
 */
@Timeout(120)
class PythonClientTest {

  @Test
  void shouldPassThePythonUnitSuite() throws Exception {
    PythonClientIT.Run run = PythonClientIT.python(Map.of(), "tests");

    assertThat(run.exit()).as(run.output()).isZero();
    assertThat(run.output()).contains("OK").doesNotContain("skipped");
  }
}
