package dev.effectledger.schema;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.io.JsonEOFException;

/**
 * What is wrong with text that is not JSON, in words for the person who sent it: the reason and
 * where (line and column), without Jackson's internals (its source descriptions, feature names and
 * character codes), which a 400 answer or a dead letter must not carry.
 */
public final class JsonSyntax {

  private JsonSyntax() {}

  /** For example "unexpected character 'a': was expecting double-quote to start field name". */
  public static String describe(JsonProcessingException e) {
    String reason;
    if (e instanceof JsonEOFException) {
      reason = "it ends before the value it opens is closed";
    } else {
      String original = e.getOriginalMessage() == null ? "" : e.getOriginalMessage();
      reason =
          original
              .replaceAll("\\s*\\(code -?\\d+\\)", "")
              .replaceAll("\\s*\\((start marker at|through reference chain|for ).*", "")
              .replaceAll("(?s)\\s*at \\[Source.*", "")
              .replace("('", "'")
              .replace("')", "'")
              .replaceAll("\\s+", " ")
              .trim();
      if (reason.isEmpty()) {
        reason = "it could not be read as JSON";
      } else {
        reason = Character.toLowerCase(reason.charAt(0)) + reason.substring(1);
      }
    }
    JsonLocation at = e.getLocation();
    if (at != null && at.getLineNr() > 0) {
      return reason + " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")";
    }
    return reason;
  }
}
