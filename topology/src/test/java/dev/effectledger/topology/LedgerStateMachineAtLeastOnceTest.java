package dev.effectledger.topology;

import org.apache.kafka.streams.StreamsConfig;

class LedgerStateMachineAtLeastOnceTest extends LedgerStateMachineContract {
  @Override
  String processingGuarantee() {
    return StreamsConfig.AT_LEAST_ONCE;
  }
}
