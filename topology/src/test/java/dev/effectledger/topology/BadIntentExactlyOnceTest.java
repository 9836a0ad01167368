package dev.effectledger.topology;

import org.apache.kafka.streams.StreamsConfig;

class BadIntentExactlyOnceTest extends BadIntentContract {
  @Override
  String processingGuarantee() {
    return StreamsConfig.EXACTLY_ONCE_V2;
  }
}
