/**
 * Test fixtures shared by every module's tests: an in-process KRaft cluster ({@link
 * EmbeddedKafkaCluster}, wrapped as the JUnit 5 extension {@link KafkaClusterExtension}) and a
 * loopback Schema Registry ({@link SchemaRegistryServer}) for tests that span JVMs, where the
 * in-memory {@code mock://} registry cannot be shared. Used in test scope only.
 */
package dev.effectledger.testkit;
