package dev.effectledger.topology;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Properties;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.streams.StreamsConfig;
import org.junit.jupiter.api.Test;

class LedgerStreamsPropertiesTest {

  private static Properties base(String key, Object value) {
    Properties base = new Properties();
    base.put(StreamsConfig.APPLICATION_ID_CONFIG, "props-test");
    base.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "localhost:9092");
    if (key != null) {
      base.put(key, value);
    }
    return base;
  }

  /** The batch size the ledger's producer is built with, as Kafka Streams resolves it. */
  private static Object producerBatchSize(Properties props) {
    return new StreamsConfig(props)
        .getProducerConfigs("client")
        .get(ProducerConfig.BATCH_SIZE_CONFIG);
  }

  /** The linger the ledger's producer is built with, as Kafka Streams resolves it. */
  private static Object producerLinger(Properties props) {
    return new StreamsConfig(props)
        .getProducerConfigs("client")
        .get(ProducerConfig.LINGER_MS_CONFIG);
  }

  @Test
  void shouldHoldTheProducersRecordsForTheCommitByDefault() {
    Properties props = LedgerTopology.streamsProperties(base(null, null));

    assertThat(producerLinger(props).toString())
        .isEqualTo(String.valueOf(LedgerTopology.PRODUCER_LINGER_MS));
  }

  @Test
  void shouldKeepTheLingerAnOperatorSetsWithOrWithoutThePrefix() {
    assertThat(
            producerLinger(LedgerTopology.streamsProperties(base("producer.linger.ms", "5")))
                .toString())
        .isEqualTo("5");
    assertThat(producerLinger(LedgerTopology.streamsProperties(base("linger.ms", "0"))).toString())
        .isEqualTo("0");
  }

  @Test
  void shouldGiveTheProducerLargerBatchesByDefault() {
    Properties props = LedgerTopology.streamsProperties(base(null, null));

    assertThat(producerBatchSize(props)).isEqualTo(LedgerTopology.PRODUCER_BATCH_BYTES);
    assertThat(props.get(StreamsConfig.PROCESSING_GUARANTEE_CONFIG))
        .isEqualTo(StreamsConfig.EXACTLY_ONCE_V2);
  }

  @Test
  void shouldKeepTheBatchSizeAnOperatorSetsWithThePrefix() {
    Properties props = LedgerTopology.streamsProperties(base("producer.batch.size", "32768"));

    assertThat(producerBatchSize(props).toString()).isEqualTo("32768");
  }

  @Test
  void shouldKeepTheBatchSizeAnOperatorSetsWithoutThePrefix() {
    // Unprefixed, Kafka Streams hands it to the producer, unless a prefixed value overrides it:
    // the ledger's default must not be that override.
    Properties props = LedgerTopology.streamsProperties(base("batch.size", "16384"));

    assertThat(producerBatchSize(props).toString()).isEqualTo("16384");
  }

  @Test
  void shouldTurnTransactionalStateStoresOnUnlessTheOperatorTurnsThemOff() {
    assertThat(
            LedgerTopology.streamsProperties(new Properties())
                .get(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG))
        .isEqualTo(true);
    assertThat(
            LedgerTopology.streamsProperties(
                    base(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG, "false"))
                .get(StreamsConfig.TRANSACTIONAL_STATE_STORES_CONFIG))
        .isEqualTo("false");
  }
}
