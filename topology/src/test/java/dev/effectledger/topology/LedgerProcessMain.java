package dev.effectledger.topology;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * The ledger topology alone in a JVM, for tests that kill it: {@code LedgerProcessMain <bootstrap>
 * <registryUrl> <applicationId> <stateDir> <default|short-deadlines> [key=value ...]}, {@code
 * short-deadlines} for {@link Fixtures#shortDeadlinePolicies}, each {@code key=value} a Streams
 * setting. Prints {@code KAFKA <version>} (the Kafka client it runs on) first, {@code RESTORE
 * <store> <changelog partition> <from offset> <to offset>} for each store partition it restores,
 * and {@code RUNNING} once the Streams client runs. SIGTERM closes the Streams client (a clean
 * stop, as a deployment's rolling bounce does); SIGKILL is a crash.
 */
public final class LedgerProcessMain {

  private LedgerProcessMain() {}

  public static void main(String[] args) throws InterruptedException {
    System.out.println("KAFKA " + kafkaVersion());
    String bootstrap = args[0];
    try (Admin admin =
        Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      CoPartitioning.verify(admin);
    }
    Properties props = Fixtures.streamsProperties(bootstrap, args[2], Path.of(args[3]));
    for (int i = 5; i < args.length; i++) {
      String[] setting = args[i].split("=", 2);
      props.put(setting[0], setting[1]);
    }
    KafkaStreams streams =
        LedgerTopology.streams(
            LedgerConfig.of(
                args.length > 4 && args[4].equals("short-deadlines")
                    ? Fixtures.shortDeadlinePolicies()
                    : Fixtures.policies(),
                args[1]),
            props);
    streams.setGlobalStateRestoreListener(
        new StateRestoreListener() {
          @Override
          public void onRestoreStart(TopicPartition tp, String store, long from, long to) {
            System.out.println("RESTORE " + store + " " + tp + " " + from + " " + to);
            System.out.flush();
          }

          @Override
          public void onBatchRestored(TopicPartition tp, String store, long end, long count) {}

          @Override
          public void onRestoreEnd(TopicPartition tp, String store, long total) {}
        });
    streams.setUncaughtExceptionHandler(
        e -> StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD);
    streams.setStateListener(
        (now, before) -> {
          if (now == KafkaStreams.State.RUNNING) {
            System.out.println("RUNNING");
            System.out.flush();
          }
        });
    Runtime.getRuntime()
        .addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(60)), "close"));
    streams.start();
    new CountDownLatch(1).await();
  }

  /**
   * The Kafka client release on the classpath, from the properties file the clients jar carries
   * (the class that reads it moved to an internal package in 4.4).
   */
  static String kafkaVersion() {
    Properties version = new Properties();
    try (InputStream in =
        LedgerProcessMain.class.getResourceAsStream("/kafka/kafka-version.properties")) {
      version.load(in);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return version.getProperty("version");
  }
}
