package dev.effectledger.connectors;

import java.util.Optional;
import java.util.Set;

/**
 * Performs effects for one tool. Implementations are thread-safe: an executor calls {@link
 * #execute} from many threads at once, never twice at once for the same key.
 */
public interface Connector extends AutoCloseable {

  /** What the downstream guarantees; fixed for the connector's life. */
  Capabilities capabilities();

  /**
   * Performs the effect once, passing {@code request.effectKey()} downstream. Expected failures are
   * outcomes, never exceptions; an exception thrown anyway is treated as {@link
   * EffectOutcome.Ambiguous}.
   */
  EffectOutcome execute(EffectRequest request);

  /**
   * Answers whether the effect for {@code effectKey} happened, for reconciliation. Connectors whose
   * {@link Capabilities#supportsLookup()} is false answer {@link Lookup#unsupported()}.
   */
  default Lookup lookup(String effectKey) {
    return Lookup.unsupported();
  }

  /**
   * Every effect key the downstream has acted on, for finding effects without a ledger entry; empty
   * when the downstream cannot list them.
   */
  default Optional<Set<String>> effectKeys() {
    return Optional.empty();
  }

  /**
   * Whether {@link #effectKeys} lists the downstream's effects (the reconciler then keeps keys).
   */
  default boolean listsEffects() {
    return false;
  }

  @Override
  default void close() {}
}
