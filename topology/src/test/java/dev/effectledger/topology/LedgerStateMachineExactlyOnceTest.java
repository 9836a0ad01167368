package dev.effectledger.topology;

import org.apache.kafka.streams.StreamsConfig;

class LedgerStateMachineExactlyOnceTest extends LedgerStateMachineContract {
  @Override
  String processingGuarantee() {
    return StreamsConfig.EXACTLY_ONCE_V2;
  }
}
