/**
 * Serdes for Effect Ledger's Avro records.
 *
 * <p>External topics use the Schema Registry wire format: one magic byte {@code 0}, a 4-byte
 * big-endian schema id, then the Avro binary encoding. Producers that use the usual Schema Registry
 * serializers therefore interoperate with the ledger. That serializer library is not published on
 * Maven Central, which is the only repository this project builds from, so the wire format, the
 * registry REST client ({@link HttpSchemaRegistry}) and an in-memory registry for the embedded mode
 * and tests ({@link InMemorySchemaRegistry}, selected by a {@code mock://scope} URL) are written
 * here. They implement only what the serdes need: register a schema under {@code <topic>-value} and
 * fetch a schema by id.
 *
 * <p>Internal data (the ledger store) uses plain Avro binary through {@link AvroBinarySerde}.
 */
package dev.effectledger.schema.serde;
