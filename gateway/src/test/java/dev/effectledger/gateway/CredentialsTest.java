package dev.effectledger.gateway;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Properties;
import org.junit.jupiter.api.Test;

class CredentialsTest {

  private static Properties settings(String... kv) {
    Properties p = new Properties();
    for (int i = 0; i < kv.length; i += 2) {
      p.setProperty(kv[i], kv[i + 1]);
    }
    return p;
  }

  @Test
  void shouldMapABearerTokenToItsTenantByTheTokensHash() {
    Credentials credentials =
        Credentials.fromProperties(
            settings(
                "gateway.credentials.agents.sha256", Credentials.sha256Hex("s3cret"),
                "gateway.credentials.agents.tenant", "acme",
                "gateway.credentials.ops.sha256", Credentials.sha256Hex("other").toUpperCase(),
                "gateway.credentials.ops.tenant", "globex",
                "gateway.credentials.ops.tools", "send_email, create_ticket"));
    var agents = credentials.authenticate("Bearer s3cret").orElseThrow();
    assertThat(agents.tenant()).isEqualTo("acme");
    assertThat(agents.mayCall("charge_card")).isTrue();
    var ops = credentials.authenticate("bearer other").orElseThrow();
    assertThat(ops.tenant()).isEqualTo("globex");
    assertThat(ops.mayCall("send_email")).isTrue();
    assertThat(ops.mayCall("charge_card")).isFalse();
    assertThat(credentials.authenticate("Bearer wrong")).isEmpty();
    assertThat(credentials.authenticate("Basic czNjcmV0")).isEmpty();
    assertThat(credentials.authenticate("s3cret")).isEmpty();
    assertThat(credentials.authenticate(null)).isEmpty();
  }

  @Test
  void shouldNameTheSettingThatIsWrong() {
    assertThatThrownBy(
            () ->
                Credentials.fromProperties(
                    settings("gateway.credentials.a.sha256", Credentials.sha256Hex("x"))))
        .hasMessageContaining("gateway.credentials.a.tenant");
    assertThatThrownBy(
            () ->
                Credentials.fromProperties(
                    settings(
                        "gateway.credentials.a.sha256", "not-hex",
                        "gateway.credentials.a.tenant", "t")))
        .hasMessageContaining("64 hex digits");
    assertThatThrownBy(
            () ->
                Credentials.fromProperties(
                    settings(
                        "gateway.credentials.a.sha256", Credentials.sha256Hex("x"),
                        "gateway.credentials.a.tenant", "t",
                        "gateway.credentials.a.token", "x")))
        .hasMessageContaining("unknown setting");
    assertThatThrownBy(
            () ->
                Credentials.fromProperties(
                    settings(
                        "gateway.credentials.a.sha256",
                        Credentials.sha256Hex("x"),
                        "gateway.credentials.a.tenant",
                        "t",
                        "gateway.credentials.b.sha256",
                        Credentials.sha256Hex("x"),
                        "gateway.credentials.b.tenant",
                        "u")))
        .hasMessageContaining("same token");
  }
}
