package dev.effectledger.connectors.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.Connectors;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.policy.ToolPolicy;
import dev.effectledger.policy.ToolPolicyLoader;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shipped {@code config/postgres.sql} makes what the shipped {@code config/tools.yaml}'s {@code
 * record_refund} needs, and the tool runs with the password in a pgpass file, as the file's comment
 * tells a user to do: on a real PostgreSQL server started by the test.
 */
class ShippedPostgresSetupTest {

  private static final String PASSWORD = "a password of the test's";

  @Test
  void shouldRunTheExampleRefundToolOnTheDatabaseTheShippedScriptMakes(@TempDir Path dir)
      throws Exception {
    try (EmbeddedPostgres postgres = EmbeddedPostgres.builder().start()) {
      runAsPsqlWould(postgres, Files.readString(Path.of("../config/postgres.sql")));
      Path pgpass = dir.resolve("pgpass");
      Files.writeString(
          pgpass, "127.0.0.1:" + postgres.getPort() + ":payments:ledger:" + PASSWORD + "\n");
      String previous = System.getProperty("org.postgresql.pgpassfile");
      System.setProperty("org.postgresql.pgpassfile", pgpass.toString());
      ToolPolicy shipped =
          new ToolPolicyLoader().load(Path.of("../config/tools.yaml")).tools().get("record_refund");
      ObjectNode settings = (ObjectNode) shipped.settings().deepCopy();
      // the shipped url names PostgreSQL's port, 5432; the test's server has a port of its own
      settings.put(
          "url", settings.get("url").asText().replace(":5432/", ":" + postgres.getPort() + "/"));
      Connector refunds =
          Connectors.create(shipped.withSettings(shipped.connector(), settings), Clock.systemUTC());
      try {
        EffectOutcome outcome =
            refunds.execute(
                new EffectRequest(
                    "k1",
                    "k1",
                    "acme",
                    "record_refund",
                    "{\"customer\":\"cus_1\",\"amount\":500,\"currency\":\"eur\"}",
                    1,
                    null));

        assertThat(outcome)
            .isInstanceOfSatisfying(
                EffectOutcome.Succeeded.class, s -> assertThat(s.effectId()).isEqualTo("1"));
        try (Connection c = postgres.getDatabase("postgres", "payments").getConnection();
            Statement s = c.createStatement();
            ResultSet rs =
                s.executeQuery(
                    "SELECT customer, amount, tableowner FROM refunds"
                        + " JOIN pg_tables ON tablename = 'refunds'")) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getString(1)).isEqualTo("cus_1");
          assertThat(rs.getLong(2)).isEqualTo(500);
          assertThat(rs.getString(3)).isEqualTo("ledger");
          assertThat(rs.next()).as("one refund").isFalse();
        }
      } finally {
        refunds.close();
        if (previous == null) {
          System.clearProperty("org.postgresql.pgpassfile");
        } else {
          System.setProperty("org.postgresql.pgpassfile", previous);
        }
      }
    }
  }

  /**
   * Runs the script as {@code psql -v password=... -f} would, as the superuser: its one variable
   * substituted, each {@code \connect db} switching databases. No psql here: the embedded server
   * ships the server's binaries only.
   */
  private static void runAsPsqlWould(EmbeddedPostgres postgres, String script) throws Exception {
    String database = "postgres";
    List<String> statements = new ArrayList<>();
    for (String line : script.split("\n")) {
      if (line.startsWith("--") || line.isBlank()) {
        continue;
      }
      if (line.startsWith("\\connect ")) {
        execute(postgres, database, statements);
        statements.clear();
        database = line.substring("\\connect ".length()).trim();
        continue;
      }
      statements.add(line.replace(":'password'", "'" + PASSWORD.replace("'", "''") + "'"));
    }
    execute(postgres, database, statements);
  }

  private static void execute(EmbeddedPostgres postgres, String database, List<String> lines)
      throws Exception {
    try (Connection c = postgres.getDatabase("postgres", database).getConnection();
        Statement s = c.createStatement()) {
      // one statement at a time: CREATE DATABASE runs outside a transaction block
      for (String statement : String.join("\n", lines).split(";")) {
        if (!statement.isBlank()) {
          s.execute(statement);
        }
      }
    }
  }
}
