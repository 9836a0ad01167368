package dev.effectledger.client;

import dev.effectledger.schema.ErrorCode;
import dev.effectledger.schema.ErrorInfo;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;

/**
 * Why a call did not succeed, as the ledger or the downstream said it.
 *
 * @param code a stable code: one of {@link ErrorCode} from the ledger, or the connector's own (an
 *     HTTP downstream's {@code TIMEOUT}, a database's {@code SQLSTATE_...})
 * @param message what happened, for people
 * @param retriable true when making the same call again can help
 * @param correctiveAction what the caller or an operator should do
 */
public record CallError(String code, String message, boolean retriable, String correctiveAction) {

  public CallError {
    Objects.requireNonNull(code, "code");
    message = message == null ? "" : message;
    correctiveAction = correctiveAction == null ? "" : correctiveAction;
  }

  static CallError of(ErrorInfo error) {
    return new CallError(
        error.getCode(), error.getMessage(), error.getRetriable(), error.getCorrectiveAction());
  }

  /** The code as a ledger {@link ErrorCode}, or empty when it is a connector's own. */
  public Optional<ErrorCode> ledgerCode() {
    return Arrays.stream(ErrorCode.values()).filter(c -> c.name().equals(code)).findFirst();
  }
}
