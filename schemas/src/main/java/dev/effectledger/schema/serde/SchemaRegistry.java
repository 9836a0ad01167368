package dev.effectledger.schema.serde;

import org.apache.avro.Schema;

/**
 * The two Schema Registry operations the serdes need. Implementations cache: both calls are made on
 * the hot path of every serializer and deserializer.
 */
public interface SchemaRegistry {

  /**
   * Registers {@code schema} under {@code subject}, or finds it when it is already registered.
   *
   * @return the schema's global id
   * @throws SchemaRegistryException when the registry refuses or cannot be reached
   */
  int register(String subject, Schema schema);

  /**
   * Returns the schema with the given global id.
   *
   * @throws SchemaRegistryException when no schema has that id, or the registry cannot be reached
   */
  Schema schemaById(int id);
}
