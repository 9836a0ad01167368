package dev.effectledger.bench;

import dev.effectledger.embedded.EmbeddedKafkaCluster;
import dev.effectledger.schema.Topics;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsConfig;

/**
 * {@code bench/run postgres}: what a user would build instead of the ledger, at the same intents:
 * (a) per-request idempotency on PostgreSQL, one {@code INSERT ... ON CONFLICT DO NOTHING}
 * transaction per intent and then the result update, and (b) the batched inbox, a Kafka consumer
 * writing one {@code INSERT ... ON CONFLICT} batch per poll, producing the dispatches and
 * committing offsets (with no atomicity between the three). PostgreSQL runs durable ({@code fsync},
 * {@code synchronous_commit} on) and relaxed (both off), side by side with the ledger in one run.
 */
final class PostgresBench {

  private static final int WORKERS = 8; // one per partition, as the ledger has 8 partitions
  private static final int INBOX_CONSUMERS = 2; // as the ledger has 2 stream threads

  private record Result(String name, double perSecond) {}

  private PostgresBench() {}

  static int run(int intents, int repeats) throws Exception {
    Bench.say("starting an embedded broker and two PostgreSQL servers (durable, relaxed)");
    try (EmbeddedKafkaCluster kafka = EmbeddedKafkaCluster.start(1);
        EmbeddedPostgres durable =
            EmbeddedPostgres.builder()
                .setServerConfig("fsync", "on")
                .setServerConfig("synchronous_commit", "on")
                .setServerConfig("full_page_writes", "on")
                .start();
        EmbeddedPostgres relaxed =
            EmbeddedPostgres.builder()
                .setServerConfig("fsync", "off")
                .setServerConfig("synchronous_commit", "off")
                .start()) {
      Bench.createTopics(kafka, "inbox-dispatch");
      Bench.Workload workload = Bench.produce(kafka.bootstrapServers(), intents);
      List<Result> results = new ArrayList<>();
      for (int r = 0; r < repeats; r++) {
        Bench.Run ledger =
            Bench.measureLedger(kafka, StreamsConfig.EXACTLY_ONCE_V2, "ledger-pg-" + r, intents);
        // Over the whole run, as the PostgreSQL sides are timed (their start-up in their time too).
        results.add(new Result("ledger (exactly_once_v2)", ledger.wholeRunPerSecond()));
        results.add(
            perRequest(
                "per-request, durable", durable.getPostgresDatabase(), workload, "idem_d" + r));
        results.add(
            perRequest(
                "per-request, relaxed", relaxed.getPostgresDatabase(), workload, "idem_r" + r));
        results.add(
            inbox("inbox, durable", durable.getPostgresDatabase(), kafka, intents, "inbox_d" + r));
        results.add(
            inbox("inbox, relaxed", relaxed.getPostgresDatabase(), kafka, intents, "inbox_r" + r));
      }
      report(
          results, intents, workload.distinct(), repeats, settings(durable.getPostgresDatabase()));
    }
    return 0;
  }

  /**
   * (a) Per intent: insert the key (a durable transaction), then record the result, or read it back
   * for a repeat.
   */
  private static Result perRequest(
      String name, DataSource db, Bench.Workload workload, String table) throws Exception {
    try (Connection c = db.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE "
              + table
              + " (key text PRIMARY KEY, status text NOT NULL, result text, created_at timestamptz NOT NULL DEFAULT now())");
    }
    ExecutorService pool = Executors.newFixedThreadPool(WORKERS);
    long start = System.nanoTime();
    List<Future<?>> workers = new ArrayList<>();
    for (int w = 0; w < WORKERS; w++) {
      int worker = w;
      workers.add(
          pool.submit(
              () -> {
                try (Connection c = db.getConnection();
                    PreparedStatement insert =
                        c.prepareStatement(
                            "INSERT INTO "
                                + table
                                + " (key, status) VALUES (?, 'PENDING') ON CONFLICT DO NOTHING");
                    PreparedStatement complete =
                        c.prepareStatement(
                            "UPDATE "
                                + table
                                + " SET status = 'SUCCEEDED', result = ? WHERE key = ?");
                    PreparedStatement replay =
                        c.prepareStatement(
                            "SELECT status, result FROM " + table + " WHERE key = ?")) {
                  c.setAutoCommit(true);
                  for (int i = worker; i < workload.keys().size(); i += WORKERS) {
                    String key = workload.keys().get(i);
                    insert.setString(1, key);
                    if (insert.executeUpdate() == 1) {
                      complete.setString(1, "{\"id\":\"ch_" + i + "\"}");
                      complete.setString(2, key);
                      complete.executeUpdate();
                    } else {
                      replay.setString(1, key);
                      try (ResultSet rs = replay.executeQuery()) {
                        rs.next();
                      }
                    }
                  }
                }
                return null;
              }));
    }
    for (Future<?> f : workers) {
      f.get();
    }
    pool.shutdown();
    return result(name, workload.keys().size(), start);
  }

  /**
   * (b) Per poll: one INSERT ... ON CONFLICT batch, the dispatches of the new keys, then commit the
   * offsets.
   */
  private static Result inbox(
      String name, DataSource db, EmbeddedKafkaCluster kafka, int intents, String table)
      throws Exception {
    try (Connection c = db.getConnection();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE "
              + table
              + " (key text PRIMARY KEY, received_at timestamptz NOT NULL DEFAULT now())");
    }
    AtomicLong consumed = new AtomicLong();
    ExecutorService pool = Executors.newFixedThreadPool(INBOX_CONSUMERS);
    long start = System.nanoTime();
    List<Future<?>> consumers = new ArrayList<>();
    for (int t = 0; t < INBOX_CONSUMERS; t++) {
      consumers.add(
          pool.submit(
              () -> {
                Properties cp = new Properties();
                cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
                cp.put(ConsumerConfig.GROUP_ID_CONFIG, table);
                cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
                cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
                Properties pp = new Properties();
                pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
                pp.put(ProducerConfig.ACKS_CONFIG, "all");
                pp.put(ProducerConfig.LINGER_MS_CONFIG, 5);
                try (KafkaConsumer<String, byte[]> consumer =
                        new KafkaConsumer<>(
                            cp, new StringDeserializer(), new ByteArrayDeserializer());
                    KafkaProducer<String, byte[]> producer =
                        new KafkaProducer<>(pp, new StringSerializer(), new ByteArraySerializer());
                    Connection c = db.getConnection();
                    PreparedStatement insert =
                        c.prepareStatement(
                            "INSERT INTO "
                                + table
                                + " (key) SELECT unnest(?::text[]) ON CONFLICT DO NOTHING RETURNING key")) {
                  c.setAutoCommit(true);
                  consumer.subscribe(List.of(Topics.INTENTS));
                  while (consumed.get() < intents) {
                    ConsumerRecords<String, byte[]> records = consumer.poll(Duration.ofMillis(100));
                    if (records.isEmpty()) {
                      continue;
                    }
                    Map<String, byte[]> values = new HashMap<>();
                    List<String> keys = new ArrayList<>();
                    for (ConsumerRecord<String, byte[]> record : records) {
                      keys.add(record.key());
                      values.putIfAbsent(record.key(), record.value());
                    }
                    Array array = c.createArrayOf("text", keys.toArray());
                    insert.setArray(1, array);
                    try (ResultSet fresh = insert.executeQuery()) {
                      while (fresh.next()) {
                        String key = fresh.getString(1);
                        producer.send(new ProducerRecord<>("inbox-dispatch", key, values.get(key)));
                      }
                    }
                    producer.flush();
                    consumer.commitSync();
                    consumed.addAndGet(records.count());
                  }
                }
                return null;
              }));
    }
    for (Future<?> f : consumers) {
      f.get();
    }
    pool.shutdown();
    return result(name, intents, start);
  }

  private static Result result(String name, int intents, long start) {
    double seconds = (System.nanoTime() - start) / 1e9;
    Bench.say(String.format("%-26s %,10.0f intents/s (%.1f s)", name, intents / seconds, seconds));
    return new Result(name, intents / seconds);
  }

  private static String settings(DataSource db) throws SQLException {
    try (Connection c = db.getConnection();
        Statement s = c.createStatement();
        ResultSet rs =
            s.executeQuery(
                "SELECT current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit')")) {
      rs.next();
      return "PostgreSQL "
          + rs.getString(1)
          + " (durable server: fsync="
          + rs.getString(2)
          + ", synchronous_commit="
          + rs.getString(3)
          + ")";
    }
  }

  private static double median(List<Result> results, String name) {
    double[] v =
        results.stream()
            .filter(r -> r.name().equals(name))
            .mapToDouble(Result::perSecond)
            .sorted()
            .toArray();
    return v[v.length / 2];
  }

  private static void report(
      List<Result> results, int intents, int distinct, int repeats, String postgres)
      throws Exception {
    double ledger = median(results, "ledger (exactly_once_v2)");
    StringBuilder md =
        new StringBuilder("# The ledger against what a user would build on PostgreSQL\n\n");
    md.append("Command: `bench/run postgres --intents ")
        .append(intents)
        .append(" --repeats ")
        .append(repeats)
        .append("`  \n");
    md.append(Bench.machine()).append("  \n");
    md.append(postgres)
        .append(
            "; the relaxed server has fsync=off, synchronous_commit=off. Same machine, same run.  \n");
    md.append(Bench.input(intents, distinct))
        .append(". Per-request: ")
        .append(WORKERS)
        .append(" workers, one connection each. Inbox: ")
        .append(INBOX_CONSUMERS)
        .append(" consumers on the 8 partitions. ")
        .append("Median of ")
        .append(repeats)
        .append(" runs.\n\n");
    md.append(
        "| approach | intents/s (median) | ledger / approach | target |\n| --- | ---: | ---: | --- |\n");
    md.append(
        String.format(
            "| ledger, exactly_once_v2 (dedup, dispatch, reply, audit, expiry; one transaction) | %,.0f | 1.00 | |%n",
            ledger));
    for (String[] row :
        new String[][] {
          {"per-request, durable", ">= 5x"},
          {"per-request, relaxed", ""},
          {"inbox, durable", ">= 1.0x"},
          {"inbox, relaxed", ""}
        }) {
      double v = median(results, row[0]);
      md.append(String.format("| %s | %,.0f | %.2f | %s |%n", row[0], v, ledger / v, row[1]));
    }
    md.append(
        "\nThe inbox gives no atomicity between its dedup row, its dispatches and its offsets: a crash between"
            + " them loses or repeats dispatches. The per-request table is atomic per intent but dispatches nothing.\n");
    md.append("\nAll runs:\n\n| approach | intents/s |\n| --- | ---: |\n");
    results.forEach(r -> md.append(String.format("| %s | %,.0f |%n", r.name(), r.perSecond())));
    Bench.writeReport("postgres", md);
  }
}
