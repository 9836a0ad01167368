/**
 * Benchmarks, outside the default test run: each comparison runs both sides in one run on one
 * embedded broker with the same input, and reports ratios (see docs/performance.md).
 */
package dev.effectledger.bench;
