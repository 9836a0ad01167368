package dev.effectledger.auth;

/** A bearer token a door does not take, and why, by name. */
public final class TokenRefused extends Exception {

  /** Why a token was refused. */
  public enum Reason {
    /** No {@code Authorization: Bearer} header. */
    MISSING,
    /** Not a signed JWT, or not one a bearer header can carry. */
    MALFORMED,
    /** Not signed by a key the issuer publishes, or with an algorithm it does not use. */
    BAD_SIGNATURE,
    /** Issued by another identity provider. */
    WRONG_ISSUER,
    /** Issued for another service: this one's audience is not among its {@code aud}. */
    WRONG_AUDIENCE,
    /** Past its {@code exp}. */
    EXPIRED,
    /** Before its {@code nbf}. */
    NOT_YET_VALID,
    /** No tenant claim: the door cannot tell whose calls these are. */
    NO_TENANT,
    /** The issuer's keys could not be read: not the caller's fault, try again. */
    KEYS_UNAVAILABLE
  }

  private final Reason reason;

  public TokenRefused(Reason reason, String message) {
    super(message);
    this.reason = reason;
  }

  public TokenRefused(Reason reason, String message, Throwable cause) {
    super(message, cause);
    this.reason = reason;
  }

  public Reason reason() {
    return reason;
  }
}
