/**
 * Test fixtures shared by every module's tests: {@link KafkaClusterExtension}, a JUnit 5 extension
 * around the in-process KRaft cluster of {@code dev.effectledger.embedded}. Used in test scope
 * only.
 */
package dev.effectledger.testkit;
