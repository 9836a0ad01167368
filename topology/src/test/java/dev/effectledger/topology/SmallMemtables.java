package dev.effectledger.topology;

import java.util.Map;
import org.apache.kafka.streams.state.RocksDBConfigSetter;
import org.rocksdb.Options;

/**
 * RocksDB memtables of 64 KiB instead of Kafka Streams' 16 MiB, for tests that kill a ledger
 * process: a store then reaches RocksDB's files (a memtable flush) after a few hundred entries, as
 * a deployment's does after some tens of thousands, so what a restart replays after kill -9 can be
 * told apart from the whole changelog with a test-sized load.
 */
public final class SmallMemtables implements RocksDBConfigSetter {

  /** The setting that selects this class. */
  public static final String SETTING = "rocksdb.config.setter=" + SmallMemtables.class.getName();

  @Override
  public void setConfig(String storeName, Options options, Map<String, Object> configs) {
    options.setWriteBufferSize(64 * 1024);
  }

  @Override
  public void close(String storeName, Options options) {}
}
