package dev.effectledger.schema.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class SchemaRegistriesTest {

  @Test
  void shouldShareOneInMemoryRegistryPerMockScope() {
    assertThat(SchemaRegistries.forUrl("mock://a")).isSameAs(SchemaRegistries.forUrl("mock://a"));
    assertThat(SchemaRegistries.forUrl("mock://a"))
        .isNotSameAs(SchemaRegistries.forUrl("mock://b"));
  }

  @Test
  void shouldUseRestClientForHttpUrls() {
    assertThat(SchemaRegistries.forUrl("http://127.0.0.1:8081"))
        .isInstanceOf(HttpSchemaRegistry.class);
  }

  @Test
  void shouldNameAcceptedFormsForOtherUrls() {
    assertThatThrownBy(() -> SchemaRegistries.forUrl("ftp://x"))
        .hasMessageContaining("mock://<scope>")
        .hasMessageContaining("ftp://x");
  }
}
