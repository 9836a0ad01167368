package dev.effectledger.schema;

import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HexFormat;
import java.util.List;
import org.erdtman.jcs.JsonCanonicalizer;
import org.erdtman.jcs.NumberToJSON;

/**
 * The arguments hash of key derivation v1 (docs/key-derivation.md): {@code "sha256:" +
 * hex(SHA-256(JCS(arguments without the tool's ignored fields)))}, with JCS the RFC 8785 canonical
 * form. One implementation for the client that derives it and the ledger that checks it, so the two
 * cannot drift apart.
 */
public final class ArgumentsHash {

  public static final String PREFIX = "sha256:";

  /** The deepest nesting of objects and arrays that arguments may have. */
  public static final int MAX_DEPTH = 100;

  private static final ObjectMapper JSON =
      new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private ArgumentsHash() {}

  /**
   * The hash of {@code argumentsJson} once each field {@code ignored} names (JSON pointers) is
   * removed.
   *
   * @throws IllegalArgumentException when the arguments are not JSON
   */
  public static String of(String argumentsJson, List<String> ignored) {
    return of(parse(argumentsJson), ignored);
  }

  /**
   * The hash of {@code arguments} once each field {@code ignored} names is removed; leaves {@code
   * arguments} as it was.
   */
  public static String of(JsonNode arguments, List<String> ignored) {
    JsonNode kept = arguments;
    if (!ignored.isEmpty()) {
      kept = arguments.deepCopy();
      for (String pointer : ignored) {
        remove(kept, pointer);
      }
    }
    return of(canonical(kept));
  }

  /**
   * The arguments as a JSON tree.
   *
   * @throws IllegalArgumentException when they are not JSON
   */
  public static JsonNode parse(String argumentsJson) {
    JsonNode arguments;
    try {
      arguments = JSON.readTree(argumentsJson);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("arguments are not JSON: " + JsonSyntax.describe(e), e);
    }
    if (arguments == null || arguments.isMissingNode()) {
      throw new IllegalArgumentException("arguments are empty");
    }
    checkInterchangeable(arguments, 1);
    return arguments;
  }

  /**
   * Refuses what JSON parsers read differently (RFC 7493, I-JSON, which RFC 8785 requires): a
   * number no double can hold ({@code 1e400} would canonicalize as the string "Infinity", the same
   * key as that string), a string or member name with an unpaired UTF-16 surrogate (its UTF-8 bytes
   * are undefined: Java writes '?'), and nesting deeper than {@link #MAX_DEPTH}, where parsers'
   * limits differ. Trailing content after the value is refused by the parser.
   */
  private static void checkInterchangeable(JsonNode node, int depth) {
    if (node.isContainerNode()) {
      if (depth > MAX_DEPTH) {
        throw new IllegalArgumentException(
            "arguments are nested deeper than " + MAX_DEPTH + " levels");
      }
      var fields = node.fields();
      if (node.isObject()) {
        while (fields.hasNext()) {
          var field = fields.next();
          checkText(field.getKey());
          checkInterchangeable(field.getValue(), depth + 1);
        }
      } else {
        for (JsonNode element : node) {
          checkInterchangeable(element, depth + 1);
        }
      }
    } else if (node.isNumber()) {
      if (!Double.isFinite(node.doubleValue())) {
        throw new IllegalArgumentException(
            "arguments hold a number beyond the range of a double ("
                + node.asText()
                + "); send it as a string");
      }
    } else if (node.isTextual()) {
      checkText(node.textValue());
    }
  }

  private static void checkText(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (Character.isHighSurrogate(c)
          && i + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        throw new IllegalArgumentException(
            "arguments hold an unpaired UTF-16 surrogate (\\u"
                + String.format("%04x", (int) c)
                + "), which is not Unicode text");
      }
    }
  }

  /** The hash of arguments already in canonical form. */
  public static String of(String canonicalArguments) {
    try {
      return PREFIX
          + HexFormat.of()
              .formatHex(
                  MessageDigest.getInstance("SHA-256")
                      .digest(canonicalArguments.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every JVM", e);
    }
  }

  /**
   * RFC 8785 canonical form of {@code json}.
   *
   * @throws IllegalArgumentException when it cannot be canonicalized (not JSON, a number JCS
   *     refuses)
   */
  public static String canonical(String json) {
    try {
      return new JsonCanonicalizer(json).getEncodedString();
    } catch (IOException | RuntimeException e) {
      throw new IllegalArgumentException("arguments cannot be canonicalized: " + e.getMessage(), e);
    }
  }

  /**
   * RFC 8785 canonical form of a tree {@link #parse} returned, written from the tree itself rather
   * than by printing it and handing the text to {@code JsonCanonicalizer}, which parses it again
   * (that second parse and print were a third of the ledger's hash check, docs/performance.md). The
   * rules written here are the RFC's, checked against every vector in clients/key-vectors.json:
   * members sorted by their names' UTF-16 code units ({@link String#compareTo}), strings with only
   * {@code "}, {@code \\} and the controls below U+0020 escaped (the five short forms, the rest as
   * lowercase {@code \\u00hh}), and numbers as doubles printed by the library's own ECMAScript
   * formatter ({@link NumberToJSON}).
   */
  public static String canonical(JsonNode tree) {
    StringBuilder out = new StringBuilder(64);
    try {
      write(tree, out);
    } catch (IOException e) {
      throw new IllegalArgumentException("arguments cannot be canonicalized: " + e.getMessage(), e);
    }
    return out.toString();
  }

  private static void write(JsonNode node, StringBuilder out) throws IOException {
    if (node.isObject()) {
      List<String> names = new ArrayList<>(node.size());
      node.fieldNames().forEachRemaining(names::add);
      Collections.sort(names);
      out.append('{');
      for (int i = 0; i < names.size(); i++) {
        if (i > 0) {
          out.append(',');
        }
        writeString(names.get(i), out);
        out.append(':');
        write(node.get(names.get(i)), out);
      }
      out.append('}');
    } else if (node.isArray()) {
      out.append('[');
      for (int i = 0; i < node.size(); i++) {
        if (i > 0) {
          out.append(',');
        }
        write(node.get(i), out);
      }
      out.append(']');
    } else if (node.isTextual()) {
      writeString(node.textValue(), out);
    } else if (node.isNumber()) {
      out.append(NumberToJSON.serializeNumber(node.doubleValue()));
    } else if (node.isBoolean()) {
      out.append(node.booleanValue());
    } else if (node.isNull()) {
      out.append("null");
    } else {
      throw new IOException("not a JSON value: " + node.getNodeType());
    }
  }

  private static void writeString(String text, StringBuilder out) {
    out.append('"');
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        default -> {
          if (c < 0x20) {
            out.append("\\u00")
                .append(Character.forDigit(c >> 4, 16))
                .append(Character.forDigit(c & 0xf, 16));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  /** Removes the member or element {@code pointer} names from {@code root}, when there is one. */
  public static void remove(JsonNode root, String pointer) {
    JsonPointer at = JsonPointer.compile(pointer);
    JsonNode parent = root.at(at.head());
    String last = at.last().getMatchingProperty();
    if (parent instanceof ObjectNode object) {
      object.remove(last);
    } else if (parent instanceof ArrayNode array && at.last().getMatchingIndex() >= 0) {
      int index = at.last().getMatchingIndex();
      if (index < array.size()) {
        array.remove(index);
      }
    }
  }

  /**
   * Checks a tool's key rules: every entry a JSON pointer, none both left out and required.
   *
   * @throws IllegalArgumentException naming the first pointer that is wrong and how to write it
   */
  public static void checkRules(List<String> ignored, List<String> required) {
    for (String pointer : ignored) {
      checkPointer(pointer);
    }
    for (String pointer : required) {
      checkPointer(pointer);
      if (ignored.contains(pointer)) {
        throw new IllegalArgumentException(
            "argument " + pointer + " is both ignored (volatile) and required");
      }
    }
  }

  private static void checkPointer(String pointer) {
    if (pointer == null || !pointer.startsWith("/")) {
      throw new IllegalArgumentException(
          "'" + pointer + "' is not a JSON pointer; write it like /reason or /customer/id");
    }
  }
}
