package dev.effectledger.connectors;

/**
 * A connector's answer to "did the effect for this key happen?".
 *
 * @param status what the downstream said
 * @param effectId the effect's id when found
 * @param resultJson the stored result when the downstream keeps one
 */
public record Lookup(Status status, String effectId, String resultJson) {

  /** The downstream's answer. */
  public enum Status {
    FOUND,
    NOT_FOUND,
    UNSUPPORTED,
    /** The downstream could not be asked; ask again later. */
    UNAVAILABLE
  }

  public static Lookup found(String effectId, String resultJson) {
    return new Lookup(Status.FOUND, effectId, resultJson);
  }

  public static Lookup notFound() {
    return new Lookup(Status.NOT_FOUND, null, null);
  }

  public static Lookup unsupported() {
    return new Lookup(Status.UNSUPPORTED, null, null);
  }

  public static Lookup unavailable() {
    return new Lookup(Status.UNAVAILABLE, null, null);
  }
}
