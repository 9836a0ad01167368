/**
 * Effect Ledger for the Model Context Protocol: the {@code mcp} connector, with which an executor
 * performs a tool's effect as a {@code tools/call} on an upstream MCP server (over Streamable HTTP
 * or stdio), and the counting MCP server the tests and the demo run against.
 *
 * <p>Built on the MCP Java SDK ({@code io.modelcontextprotocol.sdk}: its client, its Streamable
 * HTTP and stdio transports, its server for the counting upstream) with Jackson 2 for JSON, as the
 * rest of the project; the SDK's Streamable HTTP server is a servlet, run on Jetty's ee11 servlet
 * container (the gateway already runs on Jetty).
 */
package dev.effectledger.mcp;
