package dev.effectledger.schema.serde;

/** A Schema Registry call failed; the message says which call and why. */
public class SchemaRegistryException extends RuntimeException {

  private final boolean notFound;

  public SchemaRegistryException(String message, boolean notFound) {
    super(message);
    this.notFound = notFound;
  }

  public SchemaRegistryException(String message, Throwable cause) {
    super(message, cause);
    this.notFound = false;
  }

  /** True when the registry answered that the schema or subject does not exist. */
  public boolean isNotFound() {
    return notFound;
  }
}
