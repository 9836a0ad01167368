package dev.effectledger.schema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.entry;

import org.junit.jupiter.api.Test;

class QueryStringTest {

  @Test
  void shouldDecodeAQueryAndKeepTheFirstValueOfANameGivenTwice() {
    assertThat(
            QueryString.parse(
                "tenant=acme&key=order+42%2F7&csrf=abc&key=other&failed&&result=%7B%22a%22%3A1%7D"))
        .containsExactly(
            entry("tenant", "acme"),
            entry("key", "order 42/7"),
            entry("csrf", "abc"),
            entry("failed", ""),
            entry("result", "{\"a\":1}"));
  }

  @Test
  void shouldReadNoFieldsFromAnEmptyOrMissingQuery() {
    assertThat(QueryString.parse(null)).isEmpty();
    assertThat(QueryString.parse("")).isEmpty();
    assertThat(QueryString.parse("&")).isEmpty();
  }

  @Test
  void shouldDecodeReservedCharactersInNamesAndValues() {
    assertThat(QueryString.parse("a%3Db=c%26d%3De")).containsExactly(entry("a=b", "c&d=e"));
  }
}
