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

  /**
   * The canonical form is written from the parsed tree (one parse per intent); it must be the form
   * the RFC 8785 library gives for the tree printed (what the hash was before, and what the library
   * gives for the text itself once duplicate member names, which it refuses, are gone), for any
   * arguments. Random trees with the edges JCS cares about: controls, quotes, backslashes, non-BMP
   * characters in values and member names, integers beyond 2^53, doubles of every magnitude,
   * negative zero, deep and wide nesting.
   */
  @org.junit.jupiter.api.RepeatedTest(20)
  void shouldCanonicalizeATreeAsTheLibraryCanonicalizesItsText(
      org.junit.jupiter.api.RepetitionInfo repetition) throws Exception {
    java.util.Random random = new java.util.Random(repetition.getCurrentRepetition());
    for (int i = 0; i < 200; i++) {
      String text = randomValue(random, 0, true);
      com.fasterxml.jackson.databind.JsonNode tree = ArgumentsHash.parse(text);

      assertThat(ArgumentsHash.canonical(tree))
          .as("canonical form of %s", text)
          .isEqualTo(new org.erdtman.jcs.JsonCanonicalizer(tree.toString()).getEncodedString());
    }
  }

  private static final String CHARS =
      "az\"\\/\b\f\n\r\t\u0000\u001f\u007f\u00e9\u2028\u20ac\ue000\uffff";

  private static String randomValue(java.util.Random random, int depth, boolean object) {
    int kind = object ? 0 : random.nextInt(depth > 6 ? 5 : 7);
    switch (kind) {
      case 0 -> {
        StringBuilder out = new StringBuilder("{");
        int members = random.nextInt(5);
        for (int m = 0; m < members; m++) {
          out.append(m > 0 ? "," : "")
              .append(randomString(random))
              .append(':')
              .append(randomValue(random, depth + 1, false));
        }
        return out.append('}').toString();
      }
      case 1 -> {
        return randomString(random);
      }
      case 2 -> {
        return switch (random.nextInt(6)) {
          case 0 -> Long.toString(random.nextLong());
          case 1 -> new java.math.BigInteger(90, random).toString();
          case 2 ->
              Double.toString(Double.longBitsToDouble(random.nextLong() & 0x7fefffffffffffffL));
          case 3 ->
              (random.nextBoolean() ? "-" : "")
                  + random.nextInt(1000)
                  + "."
                  + random.nextInt(1000)
                  + "e"
                  + (random.nextInt(60) - 30);
          case 4 -> "-0";
          default -> Integer.toString(random.nextInt(2_000_000) - 1_000_000);
        };
      }
      case 3 -> {
        return random.nextBoolean() ? "true" : "false";
      }
      case 4 -> {
        return "null";
      }
      default -> {
        StringBuilder out = new StringBuilder("[");
        int elements = random.nextInt(4);
        for (int e = 0; e < elements; e++) {
          out.append(e > 0 ? "," : "").append(randomValue(random, depth + 1, false));
        }
        return out.append(']').toString();
      }
    }
  }

  /** A JSON string literal: characters from {@link #CHARS}, a surrogate pair now and then. */
  private static String randomString(java.util.Random random) {
    StringBuilder raw = new StringBuilder();
    int length = random.nextInt(6);
    for (int c = 0; c < length; c++) {
      if (random.nextInt(8) == 0) {
        raw.appendCodePoint(0x10000 + random.nextInt(0xFFFFF));
      } else {
        raw.append(CHARS.charAt(random.nextInt(CHARS.length())));
      }
    }
    StringBuilder out = new StringBuilder("\"");
    for (int i = 0; i < raw.length(); i++) {
      char ch = raw.charAt(i);
      if (ch == '"' || ch == '\\') {
        out.append('\\').append(ch);
      } else if (ch < 0x20 || random.nextInt(10) == 0) {
        out.append(String.format("\\u%04x", (int) ch));
      } else {
        out.append(ch);
      }
    }
    return out.append('"').toString();
  }

  private static String nested(int depth) {
    return "{\"a\":".repeat(depth - 1) + "[1]" + "}".repeat(depth - 1);
  }
}
