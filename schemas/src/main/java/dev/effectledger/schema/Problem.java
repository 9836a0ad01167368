package dev.effectledger.schema;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * An RFC 9457 problem: {@code type} is {@code urn:effectledger:problem:<slug>}, with the members
 * this API adds: {@code code} (an Effect Ledger error code, or the connector's), {@code retriable},
 * {@code correctiveAction}, {@code field} (a JSON pointer into the request body, or a header's
 * name), {@code key} and, when the ledger answered, {@code call} (the call as a 200 gives it).
 *
 * <p>The one error body of every HTTP API this project serves: the gateway's, the processor's query
 * API ({@code /v1/keys}, {@code /v1/results}, {@code /v1/tools}, {@code /v1/policy}). Written by
 * hand on Jackson: the body is seven members, and the libraries that model RFC 9457 (Zalando's
 * {@code problem}, Spring's {@code ProblemDetail}) come with a web framework neither server uses.
 */
public final class Problem {

  public static final String MEDIA_TYPE = "application/problem+json";
  private static final ObjectMapper JSON = new ObjectMapper();

  private final int status;
  private final ObjectNode body;

  private Problem(int status, String slug, String title, String detail) {
    this.status = status;
    this.body =
        JSON.createObjectNode()
            .put("type", "urn:effectledger:problem:" + slug)
            .put("title", title)
            .put("status", status)
            .put("detail", detail);
  }

  public static Problem of(int status, String slug, String title, String detail) {
    return new Problem(status, slug, title, detail);
  }

  /** A problem the ledger's answer to a call maps to. */
  public static Problem of(int status, String slug, String title, ToolResult reply) {
    ErrorInfo error = reply.getError();
    Problem p =
        new Problem(
            status, slug, title, error == null ? reply.getStatus().name() : error.getMessage());
    if (error != null) {
      p.error(error);
    }
    p.body.put("key", reply.getIdempotencyKey());
    p.body.set("call", ReplyJson.of(reply));
    return p;
  }

  public Problem field(String pointer) {
    body.put("field", pointer);
    return this;
  }

  public Problem key(String key) {
    body.put("key", key);
    return this;
  }

  public Problem code(String code, boolean retriable, String correctiveAction) {
    body.put("code", code).put("retriable", retriable).put("correctiveAction", correctiveAction);
    return this;
  }

  private void error(ErrorInfo error) {
    code(error.getCode(), error.getRetriable(), error.getCorrectiveAction());
  }

  /** The HTTP status the problem is answered with. */
  public int status() {
    return status;
  }

  /** The {@code type} member: {@code urn:effectledger:problem:<slug>}. */
  public String type() {
    return body.get("type").asText();
  }

  public String json() {
    return body.toString();
  }
}
