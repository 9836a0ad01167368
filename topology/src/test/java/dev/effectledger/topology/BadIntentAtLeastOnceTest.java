package dev.effectledger.topology;

import org.apache.kafka.streams.StreamsConfig;

class BadIntentAtLeastOnceTest extends BadIntentContract {
  @Override
  String processingGuarantee() {
    return StreamsConfig.AT_LEAST_ONCE;
  }
}
