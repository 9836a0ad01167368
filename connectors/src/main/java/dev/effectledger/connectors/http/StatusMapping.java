package dev.effectledger.connectors.http;

import java.util.Map;

/**
 * How an HTTP status is classified. The defaults are safe: only statuses that prove the request had
 * no effect are retryable, and any 5xx but 503 may have acted.
 */
public final class StatusMapping {

  /** The classes a status can fall in. */
  public enum Kind {
    SUCCEEDED,
    /** Poison: the request will never be accepted. */
    FAILED,
    /** The request had no effect; retry with the same key. */
    RETRYABLE,
    /** The request may have acted. */
    AMBIGUOUS
  }

  private final Map<Integer, Kind> overrides;

  public StatusMapping(Map<Integer, Kind> overrides) {
    this.overrides = Map.copyOf(overrides);
  }

  public Kind classify(int status) {
    Kind override = overrides.get(status);
    return override != null ? override : byDefault(status);
  }

  /**
   * 2xx succeeded; 408, 409 (the same key in progress), 425, 429 and 503 are retryable; other 4xx
   * failed; 500, 502, 504 and other 5xx ambiguous; anything else (1xx, unfollowed 3xx) ambiguous.
   */
  public static Kind byDefault(int status) {
    if (status >= 200 && status < 300) {
      return Kind.SUCCEEDED;
    }
    return switch (status) {
      case 408, 409, 425, 429, 503 -> Kind.RETRYABLE;
      default -> status >= 400 && status < 500 ? Kind.FAILED : Kind.AMBIGUOUS;
    };
  }
}
