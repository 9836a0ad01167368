/**
 * Test fixtures shared by every module's tests: {@link KafkaClusterExtension}, a JUnit 5 extension
 * around the in-process KRaft cluster of {@code dev.effectledger.embedded}, and {@link Leftovers},
 * a JUnit listener (registered through {@code META-INF/services}) that names what each test class
 * leaves running, and {@link ClientSuites}, which runs the Python and TypeScript clients' own
 * suites for the modules whose tests use them (app, mcp). Used in test scope only.
 *
 * <p>{@code Leftovers} is written here rather than taken from a library: JUnit has no built-in
 * check for threads and child processes a class leaves behind, and the ones that exist (e.g.
 * Lucene's thread-leak control for its randomized runner) belong to another test runner.
 */
package dev.effectledger.testkit;
