package dev.effectledger.policy;

import dev.effectledger.schema.ArgumentsHash;
import java.util.List;

/**
 * A tool's rules for the idempotency key (tools.yaml {@code key:}): arguments that do not tell one
 * action from another and are left out of the key and the arguments hash ({@code ignore}, such as a
 * free-text reason the model rewords), and arguments without which a call is refused ({@code
 * require}). Both are JSON pointers. The ledger checks every intent's arguments hash against its
 * arguments with these rules, so clients must derive keys with the same ones.
 *
 * @param ignore JSON pointers of arguments left out of the key and the hash
 * @param require JSON pointers of arguments a call must have
 */
public record ArgumentRules(List<String> ignore, List<String> require) {

  public static final ArgumentRules NONE = new ArgumentRules(List.of(), List.of());

  public ArgumentRules {
    ignore = List.copyOf(ignore);
    require = List.copyOf(require);
    ArgumentsHash.checkRules(ignore, require);
  }
}
