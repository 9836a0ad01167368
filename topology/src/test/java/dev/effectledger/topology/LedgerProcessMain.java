package dev.effectledger.topology;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;

/**
 * The ledger topology alone in a JVM, for tests that kill it: {@code LedgerProcessMain <bootstrap>
 * <registryUrl> <applicationId> <stateDir> [short-deadlines]}, the last for {@link
 * Fixtures#shortDeadlinePolicies}. Prints {@code RUNNING} once the Streams client runs.
 */
public final class LedgerProcessMain {

  private LedgerProcessMain() {}

  public static void main(String[] args) throws InterruptedException {
    String bootstrap = args[0];
    try (Admin admin =
        Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      CoPartitioning.verify(admin);
    }
    KafkaStreams streams =
        LedgerTopology.streams(
            LedgerConfig.of(
                args.length > 4 && args[4].equals("short-deadlines")
                    ? Fixtures.shortDeadlinePolicies()
                    : Fixtures.policies(),
                args[1]),
            Fixtures.streamsProperties(bootstrap, args[2], Path.of(args[3])));
    streams.setUncaughtExceptionHandler(
        e -> StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD);
    streams.setStateListener(
        (now, before) -> {
          if (now == KafkaStreams.State.RUNNING) {
            System.out.println("RUNNING");
            System.out.flush();
          }
        });
    streams.start();
    new CountDownLatch(1).await();
  }
}
