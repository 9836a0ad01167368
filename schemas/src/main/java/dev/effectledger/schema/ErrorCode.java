package dev.effectledger.schema;

/**
 * Every error code Effect Ledger puts in a reply, a dead-letter header or an audit event (the
 * ledger's, the executors' dead letters, the client's key derivation), with whether retrying the
 * same intent can help and what the caller (or operator) should do. Codes are stable API: clients
 * switch on them. Codes a connector reports for its downstream (TIMEOUT, SQLSTATE_...) are the
 * connector's and are not listed here.
 */
public enum ErrorCode {
  IDEMPOTENCY_KEY_REUSED(
      false,
      "The key already belongs to other arguments. Derive the key from the intent's own arguments; never reuse a key for a different action."),
  UNKNOWN_TOOL(
      false,
      "Add the tool to tools.yaml (or configure unknownTool) and publish it with `effectledger tools"
          + " apply`: processors, executors and gateways apply it without a restart."),
  DUPLICATE_IN_FLIGHT(
      true,
      "The original call is still running. Wait for its result on the reply topic, then retry if needed."),
  BYPASS_NOT_ALLOWED(
      false,
      "This tool's policy forbids a second execution (bypass: false). Ask the tool's owner to change the policy."),
  BYPASS_APPROVAL_INVALID(
      false,
      "The bypass approval is unsigned, forged, expired, or for another key: nothing ran. Ask an operator for an approval of this key (effectledger approve)."),
  RETRIES_EXHAUSTED(
      true, "The effect did not happen. Send the same intent again later; it will run once."),
  PARTIAL_SUCCESS(
      false,
      "Some of the tool's writes took effect and some did not (the result names which). Nothing"
          + " retries it: do the tool's corrective action, then settle the key as applied or"
          + " released."),
  AMBIGUOUS_OUTCOME(
      false,
      "The effect may have happened. Reconcile with the downstream using the key before any retry."),
  PENDING_TIMEOUT(
      false,
      "No outcome arrived in time and the tool may not be re-dispatched blind. Reconcile with the downstream using the key."),
  HELD_FOR_RECONCILIATION(
      false,
      "The effect may have happened and is held. Reconcile with the downstream, or an operator may approve a bypass."),
  EFFECT_FAILED(
      false,
      "The downstream refused the request. Fix the arguments and send a new intent (a new step)."),
  MALFORMED_RECORD(
      false, "Produce intents with the ToolIntent schema in the Schema Registry wire format."),
  UNKNOWN_SCHEMA_ID(
      false,
      "Register the schema in the Schema Registry the ledger uses, or point the producer at the same registry."),
  MISSING_KEY(false, "Set the record key to the intent's idempotency key."),
  KEY_MISMATCH(
      false,
      "The record key must equal the intent's idempotencyKey; produce with key = idempotencyKey."),
  WRONG_PARTITION(
      false,
      "Produce intents with Kafka's Java default partitioner (murmur2 of the key bytes) and no explicit"
          + " partition: in librdkafka clients (confluent-kafka, node-rdkafka) set partitioner=murmur2_random; in KafkaJS use the"
          + " Java-compatible partitioner. Otherwise a key's intents and outcomes meet in different tasks and dedup fails."),
  ARGUMENTS_TOO_LARGE(
      false,
      "Send a reference to large data instead of the data, or raise the ledger's max.arguments.bytes."),
  ARGUMENTS_NOT_JSON(false, "Send the arguments as canonical JSON text."),
  /**
   * Client only: the arguments are JSON but not an object, so no field can be named for key rules.
   */
  ARGUMENTS_NOT_OBJECT(false, "Pass a tool's arguments as one JSON object of named arguments."),
  ARGUMENTS_HASH_MISMATCH(
      false,
      "Compute argumentsHash as key derivation v1 does (docs/key-derivation.md): \"sha256:\" and the hex"
          + " SHA-256 of the RFC 8785 form of the arguments without the tool's key.ignore fields, the same rules as the ledger's"
          + " tools.yaml."),
  MISSING_REQUIRED_FIELD(
      false,
      "Send every argument the tool's key.require names in tools.yaml: without it one action cannot be"
          + " told from another."),
  INVALID_INTENT(false, "Fill every required field of the intent as its schema documents."),
  INVALID_REPLY_TOPIC(
      false,
      "Leave replyTopic empty for tool-results, or name a topic the ledger's reply pattern allows."),
  PROCESSING_FAILED(
      false,
      "The ledger failed on this record repeatedly (a bug the record triggers, not input it recognises as"
          + " bad) and dead-lettered it; report it with the dead letter's headers. Send the intent again once the bug is fixed."),
  /**
   * Executors' dead letters: a record on a dispatch topic that is not a Dispatch; nothing was
   * performed.
   */
  UNDECODABLE_DISPATCH(
      false,
      "Only the ledger writes dispatch topics: find the producer that wrote this record (the dead"
          + " letter's source headers name it) and stop it. The intent behind it, if any, is still PENDING in the ledger."),
  /**
   * Executors' dead letters: a downstream result above the outcome limit; the outcome carries a
   * marker instead.
   */
  RESULT_TOO_LARGE(
      false,
      "The effect happened; its result is in tool-dispatch.dlq (cut at 256 KiB, with its size and"
          + " SHA-256). Have the tool return a reference to large data instead of the data."),
  /** Audit only: a succeeded key got a success naming another effect id for the same effect key. */
  DOUBLE_EFFECT(
      false,
      "The action took effect twice downstream (the COMPLETED and this LATE_OUTCOME audit event name both"
          + " effect ids). Reverse the second effect with the downstream, and check that every executor runs a current release."),
  /**
   * Outcome only, never a reply: an executor did not run a dispatch because its key's life was
   * released (a fence in the attempt journal came first). The ledger only audits it.
   */
  SUPERSEDED(
      true,
      "Nothing ran: the key's life was released before this dispatch started. Its next intent runs"
          + " it once.");

  private final boolean retriable;
  private final String correctiveAction;

  ErrorCode(boolean retriable, String correctiveAction) {
    this.retriable = retriable;
    this.correctiveAction = correctiveAction;
  }

  public boolean retriable() {
    return retriable;
  }

  public String correctiveAction() {
    return correctiveAction;
  }

  /** The structured error for this code with a message specific to the case. */
  public ErrorInfo toError(String message) {
    return ErrorInfo.newBuilder()
        .setCode(name())
        .setMessage(message)
        .setRetriable(retriable)
        .setCorrectiveAction(correctiveAction)
        .build();
  }
}
