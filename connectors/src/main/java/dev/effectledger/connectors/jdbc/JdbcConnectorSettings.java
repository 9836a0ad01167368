package dev.effectledger.connectors.jdbc;

import com.fasterxml.jackson.databind.JsonNode;
import dev.effectledger.policy.FieldReader;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * One tool's JDBC connector settings.
 *
 * <pre>
 * settings:
 *   url: jdbc:postgresql://127.0.0.1:5432/payments
 *   user: app
 *   password: secret
 *   statement: INSERT INTO refunds (customer, amount) VALUES (?, ?) RETURNING id
 *   parameters: [/customer, /amount]    # JSON pointers into the arguments, bound in order
 *   dedupTable: effect_ledger_dedup     # created when missing
 *   poolSize: 8
 * </pre>
 */
public record JdbcConnectorSettings(
    String url,
    String user,
    String password,
    String statement,
    List<String> parameters,
    String dedupTable,
    int poolSize) {

  private static final List<String> FIELDS =
      List.of("url", "user", "password", "statement", "parameters", "dedupTable", "poolSize");
  private static final Pattern TABLE = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,62}");

  public JdbcConnectorSettings {
    parameters = List.copyOf(parameters);
  }

  public static JdbcConnectorSettings from(String tool, JsonNode node) {
    FieldReader s = FieldReader.of("tools." + tool + ".settings", node);
    s.allowOnly(FIELDS);
    String url = s.requiredText("url", "give a JDBC url, e.g. jdbc:postgresql://host:5432/db");
    if (url != null && !url.startsWith("jdbc:")) {
      s.problem("url", "'" + url + "' must start with jdbc:");
    }
    String statement =
        s.requiredText("statement", "give the SQL of the effect with ? for each parameter");
    List<String> parameters = new ArrayList<>();
    JsonNode list = node.get("parameters");
    if (list != null) {
      if (!list.isArray()) {
        s.problem("parameters", "must be a list of JSON pointers");
      } else {
        list.forEach(
            p -> {
              if (!p.asText().startsWith("/")) {
                s.problem(
                    "parameters", "'" + p.asText() + "' is not a JSON pointer; start it with /");
              }
              parameters.add(p.asText());
            });
      }
    }
    String table = s.text("dedupTable", "effect_ledger_dedup");
    if (!TABLE.matcher(table).matches()) {
      s.problem("dedupTable", "'" + table + "' is not a plain SQL identifier");
    }
    int poolSize = 8;
    JsonNode pool = node.get("poolSize");
    if (pool != null) {
      if (!pool.isIntegralNumber() || pool.asInt() < 1) {
        s.problem(
            "poolSize", "'" + pool.asText() + "' is not allowed; use a whole number of at least 1");
      } else {
        poolSize = pool.asInt();
      }
    }
    s.check();
    return new JdbcConnectorSettings(
        url,
        s.text("user", null),
        s.text("password", null),
        statement,
        parameters,
        table,
        poolSize);
  }
}
