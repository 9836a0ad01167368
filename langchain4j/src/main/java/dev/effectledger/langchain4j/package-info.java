/**
 * Effect Ledger for LangChain4j: {@link dev.effectledger.langchain4j.LedgerTools} gives an {@code
 * AiServices} its tools routed by the ledger's applied policy, each write published with the step
 * of the service call's {@code InvocationParameters}. It reuses LangChain4j's own tool
 * specifications and executors ({@code ToolSpecifications}, {@code DefaultToolExecutor}) and the
 * Java client's key derivation; nothing here derives keys.
 */
package dev.effectledger.langchain4j;
