/**
 * Real parts started in-process, for the embedded demo, local development and tests: a KRaft
 * cluster ({@link EmbeddedKafkaCluster}: Kafka's own servers, a controller and brokers), the two
 * Schema Registry endpoints the serdes use ({@link SchemaRegistryServer}, hand-written because the
 * registry itself is not on Maven Central), and a payment-style HTTP API that counts effects per
 * key and injects faults on request ({@link CountingDownstream}). Everything listens on 127.0.0.1.
 *
 * <p>{@link JdkHttpServers} creates every JDK HTTP server of the project, the application's too,
 * with {@code TCP_NODELAY}; a JVM that creates a JDK server of its own first must set the option at
 * launch (its class doc says why).
 */
package dev.effectledger.embedded;
