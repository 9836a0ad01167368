package dev.effectledger.bench.jmh;

import dev.effectledger.client.IdempotencyKeys;
import dev.effectledger.client.KeyRules;
import dev.effectledger.client.StepContext;
import dev.effectledger.schema.ArgumentsHash;
import dev.effectledger.schema.Dispatch;
import dev.effectledger.schema.ToolIntent;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import dev.effectledger.schema.serde.SchemaRegistries;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.rocksdb.FlushOptions;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteOptions;

/**
 * The pieces of one intent's path through the ledger, each alone: decoding and encoding the Avro
 * records (Schema Registry wire format), deriving a key (JCS canonical JSON and SHA-256), and the
 * RocksDB point operations behind the ledger store (a get that misses, a get that hits, a put), on
 * a database of one million entries. Run with {@code bench/run jmh}.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class RecordPathBenchmark {

  private static final int ENTRIES = 1_000_000;

  private RegistryAvroSerde<ToolIntent> intentSerde;
  private RegistryAvroSerde<Dispatch> dispatchSerde;
  private ToolIntent intent;
  private byte[] intentBytes;
  private Dispatch dispatch;
  private final org.apache.avro.specific.SpecificDatumWriter<Dispatch> dispatchWriter =
      new org.apache.avro.specific.SpecificDatumWriter<>(Dispatch.class);
  private StepContext step;
  private KeyRules rules;
  private RocksDB db;
  private Options options;
  private WriteOptions writeOptions;
  private Path dir;
  private byte[] value;
  private long next = ENTRIES;

  @Setup(Level.Trial)
  public void setUp() throws Exception {
    var registry = SchemaRegistries.forUrl("mock://jmh");
    intentSerde = new RegistryAvroSerde<>(registry, ToolIntent.class);
    dispatchSerde = new RegistryAvroSerde<>(registry, Dispatch.class);
    intent =
        ToolIntent.newBuilder()
            .setIdempotencyKey("v1:Ay6vcdvkjNaRRwCg7qviGud7K3re8XOqCEd9H2jphGs")
            .setTenant("acme")
            .setRunId("run-1")
            .setStepId("step-1")
            .setTool("charge_card")
            .setArguments("{\"amount\":1200,\"to\":\"cus_42\",\"reason\":\"r\"}")
            .setArgumentsHash(
                ArgumentsHash.of("{\"amount\":1200,\"to\":\"cus_42\",\"reason\":\"r\"}", List.of()))
            .setRequestedAt(Instant.now())
            .build();
    intentBytes = intentSerde.serialize("tool-intents", intent);
    dispatch =
        Dispatch.newBuilder()
            .setIdempotencyKey(intent.getIdempotencyKey())
            .setEffectKey(intent.getIdempotencyKey())
            .setTenant("acme")
            .setRunId("run-1")
            .setStepId("step-1")
            .setTool("charge_card")
            .setLane("payments")
            .setArguments(intent.getArguments())
            .setAttempt(1)
            .setDispatchedAt(Instant.now())
            .build();
    step = new StepContext("acme", "run-1", "step-1", "customer:42");
    rules = KeyRules.builder().ignore("/reason").require("/amount", "/to").build();
    RocksDB.loadLibrary();
    dir = Files.createTempDirectory("jmh-rocksdb");
    options = new Options().setCreateIfMissing(true);
    writeOptions =
        new WriteOptions().setDisableWAL(true); // Kafka Streams writes RocksDB without its WAL
    db = RocksDB.open(options, dir.toString());
    value = new byte[200];
    ThreadLocalRandom.current().nextBytes(value);
    for (int i = 0; i < ENTRIES; i++) {
      db.put(writeOptions, key(i), value);
    }
    db.flush(new FlushOptions().setWaitForFlush(true));
  }

  @TearDown(Level.Trial)
  public void tearDown() throws Exception {
    db.close();
    options.close();
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }

  private static byte[] key(long i) {
    return ("acme|v1:bench-" + i).getBytes(StandardCharsets.UTF_8);
  }

  @Benchmark
  public ToolIntent decodeIntent() {
    return intentSerde.deserialize("tool-intents", intentBytes);
  }

  @Benchmark
  public byte[] encodeIntent() {
    return intentSerde.serialize("tool-intents", intent);
  }

  @Benchmark
  public byte[] encodeDispatch() {
    return dispatchSerde.serialize("tool-dispatch.payments", dispatch);
  }

  /**
   * Encoding a dispatch as it was before 2026-11-24, for comparison in the same run: Avro's direct
   * (unbuffered) encoder into a fresh stream.
   */
  @Benchmark
  public byte[] encodeDispatchDirect() throws java.io.IOException {
    var out = new java.io.ByteArrayOutputStream(256);
    out.write(new byte[] {0, 0, 0, 0, 1});
    var encoder = org.apache.avro.io.EncoderFactory.get().directBinaryEncoder(out, null);
    dispatchWriter.write(dispatch, encoder);
    encoder.flush();
    return out.toByteArray();
  }

  @Benchmark
  public String deriveKey() {
    return IdempotencyKeys.derive(step, "charge_card", intent.getArguments(), rules).key();
  }

  /** The ledger's hash check of one intent: one parse, the canonical form from the tree. */
  @Benchmark
  public String checkHash() {
    return ArgumentsHash.of(ArgumentsHash.parse(intent.getArguments()), List.of("/reason"));
  }

  /**
   * The check as it was before 2026-11-24, for comparison in the same run: parse, print the tree,
   * and let the RFC 8785 library parse the text again to canonicalize it.
   */
  @Benchmark
  public String checkHashViaText() {
    var kept = ArgumentsHash.parse(intent.getArguments()).deepCopy();
    ArgumentsHash.remove(kept, "/reason");
    return ArgumentsHash.of(ArgumentsHash.canonical(kept.toString()));
  }

  @Benchmark
  public byte[] rocksGetHit() throws RocksDBException {
    return db.get(key(ThreadLocalRandom.current().nextInt(ENTRIES)));
  }

  @Benchmark
  public byte[] rocksGetMiss() throws RocksDBException {
    return db.get(key(ENTRIES + ThreadLocalRandom.current().nextInt(ENTRIES)));
  }

  @Benchmark
  public void rocksPut() throws RocksDBException {
    db.put(writeOptions, key(next++), value);
  }
}
