package dev.effectledger.client;

import dev.effectledger.schema.ArgumentsHash;
import java.util.ArrayList;
import java.util.List;

/**
 * Per tool, which argument fields the key ignores and which it must contain.
 *
 * @param volatileFields JSON pointers removed before hashing: free-text reasons, client timestamps,
 *     trace ids; they vary between retries of one action
 * @param requiredFields JSON pointers that must be present and not null: amounts, ids,
 *     destinations, enums; a call without one is refused rather than keyed on less than the action
 */
public record KeyRules(List<String> volatileFields, List<String> requiredFields) {

  public static final KeyRules NONE = new KeyRules(List.of(), List.of());

  public KeyRules {
    volatileFields = List.copyOf(volatileFields);
    requiredFields = List.copyOf(requiredFields);
    ArgumentsHash.checkRules(volatileFields, requiredFields);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Builds {@link KeyRules}; by default no field is volatile and none is required. */
  public static final class Builder {
    private final List<String> volatileFields = new ArrayList<>();
    private final List<String> requiredFields = new ArrayList<>();

    public Builder ignore(String... pointers) {
      volatileFields.addAll(List.of(pointers));
      return this;
    }

    public Builder require(String... pointers) {
      requiredFields.addAll(List.of(pointers));
      return this;
    }

    public KeyRules build() {
      return new KeyRules(volatileFields, requiredFields);
    }
  }
}
