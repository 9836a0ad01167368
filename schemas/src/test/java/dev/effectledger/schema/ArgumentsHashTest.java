package dev.effectledger.schema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The ledger checks every intent's arguments hash with this parse; what it refuses, it answers
 * ARGUMENTS_NOT_JSON. Arguments that two JSON parsers would read differently must be refused, not
 * hashed: 1e400 hashed as the string "Infinity", an unpaired surrogate as '?'.
 */
class ArgumentsHashTest {

  @ParameterizedTest
  @ValueSource(
      strings = {
        "{\"n\":1e400}",
        "{\"n\":-1e400}",
        "{\"s\":\"\\ud800\"}",
        "{\"s\":\"x\\udc00\"}",
        "{\"\\udbff\":1}",
        "{\"x\":1} trailing",
        "{\"x\":1}{\"y\":2}"
      })
  void shouldRefuseArgumentsThatParsersReadDifferently(String arguments) {
    assertThatThrownBy(() -> ArgumentsHash.of(arguments, List.of()))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 50, 99, 100})
  void shouldTakeArgumentsNestedUpToTheBound(int depth) {
    assertThat(ArgumentsHash.of(nested(depth), List.of())).startsWith(ArgumentsHash.PREFIX);
  }

  @ParameterizedTest
  @ValueSource(ints = {101, 500})
  void shouldRefuseArgumentsNestedDeeperThanTheBound(int depth) {
    assertThatThrownBy(() -> ArgumentsHash.of(nested(depth), List.of()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("deeper than 100");
  }

  @ParameterizedTest
  @ValueSource(
      strings = {"{\"s\":\"\\ud83d\\ude00\"}", "{\"s\":\"😀\"}", "{\"n\":1.7976931348623157e308}"})
  void shouldTakePairedSurrogatesAndTheLargestDouble(String arguments) {
    assertThat(ArgumentsHash.of(arguments, List.of())).startsWith(ArgumentsHash.PREFIX);
  }

  private static String nested(int depth) {
    return "{\"a\":".repeat(depth - 1) + "[1]" + "}".repeat(depth - 1);
  }
}
