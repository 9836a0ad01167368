package dev.effectledger.app.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.github.mustachejava.DefaultMustacheFactory;
import com.github.mustachejava.Mustache;
import com.github.mustachejava.MustacheFactory;
import com.sun.net.httpserver.HttpExchange;
import dev.effectledger.embedded.JdkHttpServers;
import java.io.IOException;
import java.io.InputStream;
import java.io.StringWriter;
import java.util.Map;

/**
 * How the console answers: pages rendered from its mustache.java templates (HTML-escaping by
 * default), JSON, plain text, redirects, and its static files (its own script and style, uPlot's
 * from the WebJar).
 */
final class ConsoleResponses {

  private final MustacheFactory templates = new DefaultMustacheFactory("console");

  /** Renders {@code template} ({@code console/<template>.mustache}) with the page model. */
  void html(HttpExchange exchange, int status, String template, Map<String, Object> page)
      throws IOException {
    Mustache mustache = templates.compile(template + ".mustache");
    StringWriter out = new StringWriter();
    mustache.execute(out, page);
    answer(exchange, status, "text/html; charset=utf-8", out.toString());
  }

  static void json(HttpExchange exchange, JsonNode body) throws IOException {
    answer(exchange, 200, "application/json", body.toString());
  }

  static void text(HttpExchange exchange, int status, String body) throws IOException {
    answer(exchange, status, "text/plain; charset=utf-8", body);
  }

  static void redirect(HttpExchange exchange, String location) throws IOException {
    exchange.getResponseHeaders().set("Location", location);
    exchange.sendResponseHeaders(303, -1);
  }

  private static void answer(HttpExchange exchange, int status, String type, String body)
      throws IOException {
    JdkHttpServers.answer(exchange, status, type, body);
  }

  /** The console's own script and style, and uPlot's from its WebJar. */
  private static final Map<String, String> STATIC =
      Map.of(
          "console.js", "console/console.js",
          "console.css", "console/console.css",
          "uPlot.iife.min.js", "META-INF/resources/webjars/uplot/1.6.30/dist/uPlot.iife.min.js",
          "uPlot.min.css", "META-INF/resources/webjars/uplot/1.6.30/dist/uPlot.min.css");

  static void staticFile(HttpExchange exchange, String name) throws IOException {
    String resource = STATIC.get(name);
    if (resource == null) {
      text(exchange, 404, "no such file\n");
      return;
    }
    try (InputStream in = Console.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        text(exchange, 404, "missing from the jar: " + resource + "\n");
        return;
      }
      byte[] bytes = in.readAllBytes();
      exchange
          .getResponseHeaders()
          .set(
              "Content-Type",
              name.endsWith(".js") ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8");
      exchange.getResponseHeaders().set("Cache-Control", "max-age=3600");
      exchange.sendResponseHeaders(200, bytes.length);
      exchange.getResponseBody().write(bytes);
    }
  }
}
