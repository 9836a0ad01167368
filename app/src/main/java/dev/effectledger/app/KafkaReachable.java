package dev.effectledger.app;

import java.io.PrintStream;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;

/**
 * Waits at a process's start until the Kafka cluster answers, saying so on stderr at each try,
 * instead of exiting on the first admin timeout: a processor or executor started alongside its
 * broker (a compose file, a busy machine) would otherwise exit with "Timed out waiting for a node
 * assignment" and depend on its supervisor's back-off.
 */
final class KafkaReachable {

  /** How long a start waits for the cluster in all (default; {@code startup.kafka.wait}). */
  static final Duration DEFAULT_LIMIT = Duration.ofMinutes(5);

  private static final Duration TRY = Duration.ofSeconds(10);

  private KafkaReachable() {}

  /**
   * Returns once the cluster of {@code kafka} describes itself.
   *
   * @throws IllegalStateException when it did not within {@code limit}, saying what to check
   */
  static void await(Properties kafka, String who, Duration limit, PrintStream progress)
      throws InterruptedException {
    long started = System.nanoTime();
    long deadline = started + limit.toNanos();
    Properties props = new Properties();
    props.putAll(kafka);
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) TRY.toMillis());
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TRY.toMillis());
    String bootstrap = kafka.getProperty(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG);
    String last = null;
    try (Admin admin = Admin.create(props)) {
      while (true) {
        try {
          admin
              .describeCluster(new DescribeClusterOptions().timeoutMs((int) TRY.toMillis()))
              .nodes()
              .get(TRY.toMillis() + 1000, TimeUnit.MILLISECONDS);
          if (last != null) {
            progress.printf(
                "effectledger %s: Kafka at %s answers after %d s%n",
                who, bootstrap, TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started));
          }
          return;
        } catch (ExecutionException | TimeoutException e) {
          last = (e.getCause() == null ? e : e.getCause()).toString();
        }
        long waited = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);
        if (System.nanoTime() >= deadline) {
          throw new IllegalStateException(
              "Kafka at "
                  + bootstrap
                  + " did not answer within "
                  + limit.toSeconds()
                  + " s ("
                  + last
                  + "); check that the brokers run and that bootstrap.servers (or"
                  + " KAFKA_BOOTSTRAP_SERVERS) names them");
        }
        progress.printf(
            "effectledger %s: waiting for Kafka at %s (%d s so far, up to %d s): %s%n",
            who, bootstrap, waited, limit.toSeconds(), last);
        progress.flush();
        Thread.sleep(1000); // between tries: each already waited up to 10 s
      }
    }
  }
}
