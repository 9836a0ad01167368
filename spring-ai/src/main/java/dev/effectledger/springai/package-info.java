/**
 * Effect Ledger for Spring AI: {@link dev.effectledger.springai.LedgerToolCallback} (a decorator of
 * any {@code ToolCallback}), {@link dev.effectledger.springai.LedgerToolCallingManager} (every tool
 * of a chat call) and {@link dev.effectledger.springai.EffectLedgerAutoConfiguration} (Spring Boot:
 * the application's {@code ToolCallingManager} wrapped). Writes are published with the step of the
 * chat call's tool context ({@link dev.effectledger.springai.LedgerToolContext}); the Java client
 * derives the keys.
 */
package dev.effectledger.springai;
