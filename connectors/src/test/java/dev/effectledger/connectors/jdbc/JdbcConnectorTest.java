package dev.effectledger.connectors.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.Lookup;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The JDBC connector on a real PostgreSQL server started by the test. */
class JdbcConnectorTest {

  private static EmbeddedPostgres postgres;
  private static DataSource db;
  private JdbcConnector connector;

  @BeforeAll
  static void startPostgres() throws Exception {
    postgres = EmbeddedPostgres.builder().start();
    db = postgres.getPostgresDatabase();
  }

  @AfterAll
  static void stopPostgres() throws Exception {
    postgres.close();
  }

  @BeforeEach
  void freshTables() throws SQLException {
    sql(
        "DROP TABLE IF EXISTS refunds; DROP TABLE IF EXISTS effect_ledger_dedup;"
            + " CREATE TABLE refunds (id serial PRIMARY KEY, customer text NOT NULL, amount bigint NOT NULL CHECK (amount > 0))");
    connector =
        new JdbcConnector(
            new JdbcConnectorSettings(
                postgres.getJdbcUrl("postgres", "postgres"),
                "postgres",
                null,
                "INSERT INTO refunds (customer, amount) VALUES (?, ?) RETURNING id",
                List.of("/customer", "/amount"),
                "effect_ledger_dedup",
                4),
            db);
  }

  private static void sql(String statements) throws SQLException {
    try (Connection c = db.getConnection();
        Statement s = c.createStatement()) {
      s.execute(statements);
    }
  }

  private static int count(String query) throws SQLException {
    try (Connection c = db.getConnection();
        Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(query)) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private static EffectRequest refund(String key, String customer, long amount) {
    return new EffectRequest(
        key,
        key,
        "acme",
        "record_refund",
        "{\"customer\":\"" + customer + "\",\"amount\":" + amount + "}",
        1,
        null);
  }

  @Test
  void shouldRunStatementAndDedupRowInOneTransaction() throws SQLException {
    EffectOutcome outcome = connector.execute(refund("k1", "cus_1", 500));

    assertThat(outcome)
        .isInstanceOfSatisfying(
            EffectOutcome.Succeeded.class, s -> assertThat(s.effectId()).isEqualTo("1"));
    assertThat(count("SELECT count(*) FROM refunds WHERE customer = 'cus_1' AND amount = 500"))
        .isEqualTo(1);
    assertThat(
            count(
                "SELECT count(*) FROM effect_ledger_dedup WHERE effect_key = 'k1' AND effect_id = '1'"))
        .isEqualTo(1);
  }

  @Test
  void shouldReturnStoredResultForRepeatedKeyWithoutSecondEffect() throws SQLException {
    var first = (EffectOutcome.Succeeded) connector.execute(refund("k1", "cus_1", 500));
    var second = (EffectOutcome.Succeeded) connector.execute(refund("k1", "cus_1", 500));

    assertThat(second.effectId()).isEqualTo(first.effectId());
    assertThat(second.resultJson()).isEqualTo(first.resultJson());
    assertThat(count("SELECT count(*) FROM refunds")).isEqualTo(1);
  }

  @Test
  void shouldActOnceForConcurrentRunsOfOneKey() throws Exception {
    CountDownLatch go = new CountDownLatch(1);
    List<CompletableFuture<EffectOutcome>> runs =
        IntStream.range(0, 8)
            .mapToObj(
                i ->
                    CompletableFuture.supplyAsync(
                        () -> {
                          try {
                            go.await();
                          } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                          }
                          return connector.execute(refund("k1", "cus_1", 500));
                        }))
            .toList();
    go.countDown();

    assertThat(runs)
        .allSatisfy(r -> assertThat(r.get()).isInstanceOf(EffectOutcome.Succeeded.class));
    assertThat(runs.stream().map(r -> ((EffectOutcome.Succeeded) r.join()).effectId()).distinct())
        .hasSize(1);
    assertThat(count("SELECT count(*) FROM refunds")).isEqualTo(1);
  }

  @Test
  void shouldFailWithoutEffectOrDedupRowWhenStatementIsRefused() throws SQLException {
    EffectOutcome outcome = connector.execute(refund("k1", "cus_1", -5));

    assertThat(outcome)
        .isInstanceOfSatisfying(
            EffectOutcome.Failed.class, f -> assertThat(f.code()).isEqualTo("SQLSTATE_23514"));
    assertThat(count("SELECT count(*) FROM effect_ledger_dedup"))
        .as("the key is not spent")
        .isZero();
    assertThat(connector.execute(refund("k1", "cus_1", 5)))
        .isInstanceOf(EffectOutcome.Succeeded.class);
  }

  @Test
  void shouldFailWhenAParameterIsMissingFromArguments() {
    EffectOutcome outcome =
        connector.execute(
            new EffectRequest(
                "k1", "k1", "acme", "record_refund", "{\"customer\":\"c\"}", 1, null));

    assertThat(outcome)
        .isInstanceOfSatisfying(
            EffectOutcome.Failed.class, f -> assertThat(f.message()).contains("/amount"));
  }

  @Test
  void shouldLookUpTheDedupRow() {
    var done = (EffectOutcome.Succeeded) connector.execute(refund("k1", "cus_1", 500));

    assertThat(connector.lookup("k1")).isEqualTo(Lookup.found(done.effectId(), done.resultJson()));
    assertThat(connector.lookup("k2").status()).isEqualTo(Lookup.Status.NOT_FOUND);
  }

  @Test
  void shouldRetryAfterConnectionLossBeforeCommitAndCallCommitLossAmbiguous() {
    SQLException lost = new SQLException("connection reset", "08006");

    assertThat(JdbcConnector.classify(lost, false)).isInstanceOf(EffectOutcome.Retryable.class);
    assertThat(JdbcConnector.classify(lost, true)).isInstanceOf(EffectOutcome.Ambiguous.class);
    assertThat(JdbcConnector.classify(new SQLException("serialization", "40001"), false))
        .isInstanceOf(EffectOutcome.Retryable.class);
    assertThat(JdbcConnector.classify(new SQLException("syntax", "42601"), false))
        .isInstanceOf(EffectOutcome.Failed.class);
    assertThat(connector.capabilities().safeToRepeat()).isTrue();
  }
}
