package dev.effectledger.connectors;

/** A record a connector's effect consists of, produced in the executor's transaction. */
public record EffectRecord(String topic, byte[] key, byte[] value) {}
