package dev.effectledger.client;

/** Arguments a key cannot be derived from; {@link #code()} says why. */
public class KeyDerivationException extends IllegalArgumentException {

  private final String code;

  public KeyDerivationException(String code, String message) {
    super(message);
    this.code = code;
  }

  /** {@code ARGUMENTS_NOT_JSON}, {@code ARGUMENTS_NOT_OBJECT} or {@code MISSING_REQUIRED_FIELD}. */
  public String code() {
    return code;
  }
}
