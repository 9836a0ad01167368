package dev.effectledger.connectors.jdbc;

import com.fasterxml.jackson.core.JsonPointer;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.effectledger.connectors.Capabilities;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.Lookup;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Types;
import java.util.HashSet;
import java.util.Optional;
import java.util.Set;
import javax.sql.DataSource;

/**
 * Runs a configured SQL statement and inserts a dedup row (key, result) in the same database
 * transaction, so the effect happens once without any help from the database's users: a repeat of
 * the key finds the committed row and gets the stored result; a concurrent repeat waits on the
 * row's unique index until the first commits. Written for PostgreSQL ({@code ON CONFLICT DO
 * NOTHING}).
 */
public final class JdbcConnector implements Connector {

  private static final ObjectMapper JSON = new ObjectMapper();

  private final JdbcConnectorSettings settings;
  private final DataSource dataSource;
  private final AutoCloseable pool;

  public JdbcConnector(JdbcConnectorSettings settings, DataSource dataSource) {
    this.settings = settings;
    this.dataSource = dataSource;
    this.pool = null;
    createDedupTable();
  }

  private JdbcConnector(JdbcConnectorSettings settings, HikariDataSource pool) {
    this.settings = settings;
    this.dataSource = pool;
    this.pool = pool;
    createDedupTable();
  }

  /** A connector with its own connection pool. */
  public static JdbcConnector pooled(JdbcConnectorSettings settings) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(settings.url());
    config.setUsername(settings.user());
    config.setPassword(settings.password());
    config.setMaximumPoolSize(settings.poolSize());
    config.setAutoCommit(false);
    config.setPoolName("effectledger-jdbc-" + settings.dedupTable());
    return new JdbcConnector(settings, new HikariDataSource(config));
  }

  @Override
  public Capabilities capabilities() {
    return new Capabilities(false, true, true);
  }

  private void createDedupTable() {
    try (Connection c = dataSource.getConnection();
        Statement s = c.createStatement()) {
      c.setAutoCommit(true);
      s.execute(
          "CREATE TABLE IF NOT EXISTS "
              + settings.dedupTable()
              + " (effect_key text PRIMARY KEY,"
              + " tool text NOT NULL, result text, effect_id text, created_at timestamptz NOT NULL DEFAULT now())");
    } catch (SQLException e) {
      throw new IllegalStateException(
          "Cannot create dedup table "
              + settings.dedupTable()
              + " at "
              + settings.url()
              + ": "
              + e.getMessage()
              + ". Check the JDBC url, user and CREATE privilege.",
          e);
    }
  }

  @Override
  public EffectOutcome execute(EffectRequest request) {
    JsonNode arguments;
    try {
      arguments = JSON.readTree(request.arguments());
    } catch (IOException e) {
      return new EffectOutcome.Failed("ARGUMENTS_NOT_JSON", "arguments are not JSON");
    }
    boolean committing = false;
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try {
        if (!claim(c, request)) {
          c.rollback();
          return stored(c, request.effectKey());
        }
        EffectOutcome.Succeeded done = act(c, arguments);
        record(c, request.effectKey(), done);
        committing = true;
        c.commit();
        return done;
      } catch (SQLException | RuntimeException e) {
        if (!committing) {
          rollbackQuietly(c);
        }
        throw e;
      }
    } catch (MissingArgument e) {
      return new EffectOutcome.Failed("ARGUMENT_MISSING", e.getMessage());
    } catch (SQLException e) {
      return classify(e, committing);
    }
  }

  /** Inserts the dedup row; false when the key already has one (committed by an earlier run). */
  private boolean claim(Connection c, EffectRequest request) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "INSERT INTO "
                + settings.dedupTable()
                + " (effect_key, tool) VALUES (?, ?) ON CONFLICT (effect_key) DO NOTHING")) {
      ps.setString(1, request.effectKey());
      ps.setString(2, request.tool());
      return ps.executeUpdate() == 1;
    }
  }

  private EffectOutcome.Succeeded act(Connection c, JsonNode arguments) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(settings.statement())) {
      for (int i = 0; i < settings.parameters().size(); i++) {
        bind(ps, i + 1, settings.parameters().get(i), arguments);
      }
      ObjectNode result = JSON.createObjectNode();
      String effectId = null;
      if (ps.execute()) {
        try (ResultSet rs = ps.getResultSet()) {
          if (rs.next()) {
            effectId = rs.getString(1);
            result.put("id", effectId);
          }
        }
      } else {
        result.put("updated", ps.getUpdateCount());
      }
      return new EffectOutcome.Succeeded(result.toString(), effectId);
    }
  }

  private void record(Connection c, String key, EffectOutcome.Succeeded done) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "UPDATE "
                + settings.dedupTable()
                + " SET result = ?, effect_id = ? WHERE effect_key = ?")) {
      ps.setString(1, done.resultJson());
      ps.setString(2, done.effectId());
      ps.setString(3, key);
      ps.executeUpdate();
    }
  }

  private EffectOutcome stored(Connection c, String key) throws SQLException {
    Lookup lookup = read(c, key);
    if (lookup.status() != Lookup.Status.FOUND) {
      return new EffectOutcome.Retryable(
          "DEDUP_ROW_VANISHED", "the dedup row for the key was removed concurrently");
    }
    return new EffectOutcome.Succeeded(
        lookup.resultJson() == null ? "null" : lookup.resultJson(), lookup.effectId());
  }

  @Override
  public Lookup lookup(String effectKey) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(true);
      return read(c, effectKey);
    } catch (SQLException e) {
      return Lookup.unavailable();
    }
  }

  @Override
  public boolean listsEffects() {
    return true;
  }

  @Override
  public Optional<Set<String>> effectKeys() {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps =
            c.prepareStatement("SELECT effect_key FROM " + settings.dedupTable())) {
      c.setAutoCommit(true);
      Set<String> keys = new HashSet<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          keys.add(rs.getString(1));
        }
      }
      return Optional.of(keys);
    } catch (SQLException e) {
      return Optional.empty();
    }
  }

  private Lookup read(Connection c, String key) throws SQLException {
    try (PreparedStatement ps =
        c.prepareStatement(
            "SELECT effect_id, result FROM " + settings.dedupTable() + " WHERE effect_key = ?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? Lookup.found(rs.getString(1), rs.getString(2)) : Lookup.notFound();
      }
    }
  }

  private static void bind(PreparedStatement ps, int index, String pointer, JsonNode arguments)
      throws SQLException {
    JsonNode value = arguments.at(JsonPointer.compile(pointer));
    if (value.isMissingNode()) {
      throw new MissingArgument("argument " + pointer + " is missing");
    }
    if (value.isNull()) {
      ps.setNull(index, Types.NULL);
    } else if (value.isIntegralNumber() && value.canConvertToLong()) {
      ps.setLong(index, value.asLong());
    } else if (value.isNumber()) {
      ps.setBigDecimal(index, value.decimalValue());
    } else if (value.isBoolean()) {
      ps.setBoolean(index, value.asBoolean());
    } else if (value.isTextual()) {
      ps.setString(index, value.asText());
    } else {
      ps.setString(index, value.toString());
    }
  }

  /**
   * Before the commit nothing happened: bad data or SQL is poison, anything else can be retried.
   * During the commit nobody can tell, though a repeat is safe (the dedup row decides).
   */
  static EffectOutcome classify(SQLException e, boolean committing) {
    String state = e.getSQLState() == null ? "" : e.getSQLState();
    String code = "SQLSTATE_" + (state.isEmpty() ? "UNKNOWN" : state);
    if (committing) {
      return new EffectOutcome.Ambiguous(code, "the commit did not confirm: " + e.getMessage());
    }
    if (state.startsWith("22") || state.startsWith("23") || state.startsWith("42")) {
      return new EffectOutcome.Failed(code, "the statement was refused: " + e.getMessage());
    }
    return new EffectOutcome.Retryable(code, "rolled back without effect: " + e.getMessage());
  }

  private static void rollbackQuietly(Connection c) {
    try {
      c.rollback();
    } catch (SQLException ignored) {
      // The connection is broken; the server rolls the transaction back when it notices.
    }
  }

  /** A JSON pointer in {@code parameters} names nothing in the arguments. */
  private static final class MissingArgument extends SQLException {
    MissingArgument(String message) {
      super(message);
    }
  }

  @Override
  public void close() {
    if (pool != null) {
      try {
        pool.close();
      } catch (Exception e) {
        throw new IllegalStateException("Could not close the JDBC pool for " + settings.url(), e);
      }
    }
  }
}
