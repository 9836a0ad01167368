package dev.effectledger.connectors.executor;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.junit.jupiter.api.Test;

class ClientsTest {

  private static Duration hangingAfter(String transactionTimeoutMs) {
    Properties producer = new Properties();
    producer.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, transactionTimeoutMs);
    return Clients.hangingAfter(producer);
  }

  @Test
  void shouldCallATransactionHangingPastTwoTimeoutsAndTheCoordinatorsAbortInterval() {
    assertThat(hangingAfter("60000")).isEqualTo(Duration.ofSeconds(130));
    assertThat(hangingAfter("3000")).isEqualTo(Duration.ofSeconds(16));
  }

  @Test
  void shouldSweepEveryThirtySecondsOrSoonerWhenTransactionsHangSooner() {
    assertThat(Clients.sweepInterval(hangingAfter("60000"))).isEqualTo(Duration.ofSeconds(30));
    assertThat(Clients.sweepInterval(hangingAfter("3000"))).isEqualTo(Duration.ofSeconds(16));
  }

  private static Properties producerProps(Properties kafka) {
    kafka.put("bootstrap.servers", "localhost:9092");
    return Clients.producerProps(ExecutorConfig.of(kafka, List.of("payments"), "mock://x"), "tx-1");
  }

  @Test
  void shouldRetryATransactionsOffsetsSoonerThanKafkasDefault() {
    Properties producer = producerProps(new Properties());

    assertThat(producer.get(ProducerConfig.RETRY_BACKOFF_MS_CONFIG)).isEqualTo(10);
    assertThat(producer.get(ProducerConfig.TRANSACTIONAL_ID_CONFIG)).isEqualTo("tx-1");
  }

  @Test
  void shouldKeepTheRetryBackoffTheSettingsName() {
    Properties kafka = new Properties();
    kafka.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "250");

    assertThat(producerProps(kafka).get(ProducerConfig.RETRY_BACKOFF_MS_CONFIG)).isEqualTo("250");
  }
}
