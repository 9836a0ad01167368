/**
 * The HTTP gateway ({@code effectledger gateway}): one safe door to the ledger for agents in any
 * language. {@code POST /v1/tools/{tool}/calls} derives the idempotency key server-side with the
 * Java client's algorithm and the tool's key rules (or takes the caller's {@code Idempotency-Key}),
 * takes the tenant from the caller's bearer token, publishes the intent and waits for the answer up
 * to {@code Prefer: wait}; {@code GET /v1/calls/{key}} attaches to a call from any instance. Status
 * codes follow the IETF httpapi Idempotency-Key draft and Stripe's conventions; every error is an
 * RFC 9457 problem. docs/openapi.yaml is the contract, served at {@code /openapi.yaml}.
 *
 * <p>The server is Jetty 12's core API (no servlets): its handlers complete a request's callback
 * whenever they like, so a call waiting for its reply holds no thread, only an entry in the reply
 * consumer's map ({@link dev.effectledger.client.ReplyRouter}), and Jetty is a well-kept server
 * made for many concurrent long requests on Java 17. The JDK's {@code HttpServer} would need a
 * thread per waiting call. Jetty also speaks HTTP/2 (h2c on the plain port, h2 by ALPN with TLS),
 * where a waiting call is a stream rather than a connection of its own.
 *
 * <p>Each instance reads its own reply topic, {@code tool-results.<instance>}, which the intents it
 * publishes name. Intents carry a request id header ({@code effectledger.request.id}) that the
 * ledger copies onto the replies answering that intent itself (refusals, notices, replays), so
 * calls of one key on one instance are told apart; a final result answers every call of the key.
 */
package dev.effectledger.gateway;
