/**
 * The connector contract: how an executor asks a downstream system to perform one effect.
 *
 * <p>A {@link Connector} performs the effect named by an {@link EffectRequest}, passing its {@link
 * EffectRequest#effectKey() effect key} downstream, and classifies what happened as an {@link
 * EffectOutcome}: it took effect, it was refused, it provably did not happen, or nobody can tell.
 * Its {@link Capabilities} say what the executor may do with an ambiguous answer: retry it with the
 * same key only when the downstream honours keys or the connector is transactional.
 */
package dev.effectledger.connectors;
