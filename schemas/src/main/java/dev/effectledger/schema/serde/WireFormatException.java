package dev.effectledger.schema.serde;

import org.apache.kafka.common.errors.SerializationException;

/** A record could not be read from the wire; {@link #reason()} says why, as a stable code. */
public class WireFormatException extends SerializationException {

  /** Why a record could not be read. */
  public enum Reason {
    /** Not the wire format, or the Avro body does not decode with the named schema. */
    MALFORMED,
    /** The schema id is not known to the registry. */
    UNKNOWN_SCHEMA_ID,
    /** The registry could not be asked; the record may be readable later. */
    REGISTRY_UNAVAILABLE
  }

  private final Reason reason;

  public WireFormatException(Reason reason, String message) {
    super(message);
    this.reason = reason;
  }

  public WireFormatException(Reason reason, String message, Throwable cause) {
    super(message, cause);
    this.reason = reason;
  }

  public Reason reason() {
    return reason;
  }
}
