package dev.effectledger.client;

/**
 * A key derived from an intent, with the canonical arguments it covers.
 *
 * @param key {@code v1:} and 43 URL-safe characters; carries no argument value
 * @param canonicalArguments the arguments after volatile fields were removed, as RFC 8785 JSON
 * @param argumentsHash {@code sha256:} and the hex SHA-256 of {@code canonicalArguments}
 */
public record DerivedKey(String key, String canonicalArguments, String argumentsHash) {}
