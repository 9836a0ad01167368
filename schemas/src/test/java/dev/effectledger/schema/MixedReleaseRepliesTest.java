package dev.effectledger.schema;

import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.schema.serde.InMemorySchemaRegistry;
import dev.effectledger.schema.serde.RegistryAvroSerde;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import org.apache.avro.Schema;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumReader;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificData;
import org.junit.jupiter.api.Test;

/**
 * The reply path across a rolling upgrade, on the records themselves: a ledger and an executor of
 * the first release (schemas {@code released/v1}) each with one of this release. A v1 ledger's
 * dispatch names no reply topics, so this release's executor answers nobody and the v1 ledger
 * answers as before; a v1 executor's outcome names no answered topics, so this release's ledger
 * answers them all. Each side of the first release reads what this release writes.
 */
class MixedReleaseRepliesTest {

  private static final Instant NOW = Instant.parse("2026-11-23T10:00:00Z");

  private final InMemorySchemaRegistry registry = new InMemorySchemaRegistry();

  private static Schema v1(String name) throws IOException {
    return SchemaCompatibilityTest.parseRelease("v1")
        .getTypes()
        .get("dev.effectledger.schema." + name);
  }

  /** {@code record} in the registry's wire format, written with its own (older) schema. */
  private byte[] written(String subject, GenericRecord record) throws IOException {
    int id = registry.register(subject, record.getSchema());
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(ByteBuffer.allocate(5).put((byte) 0).putInt(id).array());
    BinaryEncoder encoder = EncoderFactory.get().directBinaryEncoder(out, null);
    new GenericDatumWriter<GenericRecord>(record.getSchema()).write(record, encoder);
    return out.toByteArray();
  }

  /** What a reader with {@code readerSchema} makes of bytes this release wrote. */
  private static GenericRecord readAsOld(byte[] wire, Class<?> type, Schema readerSchema)
      throws IOException {
    Schema writer = SpecificData.get().getSchema(type);
    byte[] body = Arrays.copyOfRange(wire, 5, wire.length);
    return new GenericDatumReader<GenericRecord>(writer, readerSchema)
        .read(null, DecoderFactory.get().binaryDecoder(body, null));
  }

  private static Dispatch dispatch() {
    return Dispatch.newBuilder()
        .setIdempotencyKey("k1")
        .setEffectKey("k1")
        .setTenant("acme")
        .setRunId("run-1")
        .setStepId("step-1")
        .setTool("charge")
        .setLane("payments")
        .setArguments("{}")
        .setAttempt(1)
        .setDispatchedAt(NOW)
        .setReplyTopic("tool-results")
        .build();
  }

  @Test
  void shouldReadADispatchOfAFirstReleaseLedgerAsAskingNoReply() throws Exception {
    GenericRecord old = new GenericData.Record(v1("Dispatch"));
    Dispatch fields = dispatch();
    for (Schema.Field f : old.getSchema().getFields()) {
      Object value = fields.get(f.name());
      old.put(f.name(), value instanceof Instant i ? i.toEpochMilli() : value);
    }

    Dispatch read =
        new RegistryAvroSerde<>(registry, Dispatch.class)
            .deserialize("tool-dispatch.payments", written("tool-dispatch.payments-value", old));

    assertThat(read.getIdempotencyKey()).isEqualTo("k1");
    assertThat(read.getReplyTopics()).as("the executor answers nobody").isEmpty();
    assertThat(read.getFirstSeenAt()).isNull();
  }

  @Test
  void shouldLetAFirstReleaseExecutorReadADispatchThatAsksForReplies() throws Exception {
    Dispatch asking = dispatch();
    asking.setReplyTopics(List.of("tool-results", "tool-results.gateway-2"));
    asking.setFirstSeenAt(NOW);
    byte[] wire =
        new RegistryAvroSerde<>(registry, Dispatch.class)
            .serialize("tool-dispatch.payments", asking);

    GenericRecord read = readAsOld(wire, Dispatch.class, v1("Dispatch"));

    assertThat(read.get("idempotencyKey").toString()).isEqualTo("k1");
    assertThat(read.get("attempt")).isEqualTo(1);
    assertThat(read.getSchema().getField("replyTopics")).isNull();
  }

  @Test
  void shouldReadAnOutcomeOfAFirstReleaseExecutorAsAnsweringNobody() throws Exception {
    GenericRecord old = new GenericData.Record(v1("Outcome"));
    old.put("idempotencyKey", "k1");
    old.put("tenant", "acme");
    old.put("tool", "charge");
    old.put("attempt", 1);
    old.put(
        "status", new GenericData.EnumSymbol(v1("OutcomeStatus"), OutcomeStatus.SUCCEEDED.name()));
    old.put("completedAt", NOW.toEpochMilli());

    Outcome read =
        new RegistryAvroSerde<>(registry, Outcome.class)
            .deserialize("tool-outcomes", written("tool-outcomes-value", old));

    assertThat(read.getStatus()).isEqualTo(OutcomeStatus.SUCCEEDED);
    assertThat(read.getRepliedTo()).as("the ledger answers every topic").isEmpty();
  }

  @Test
  void shouldLetAFirstReleaseLedgerReadAnOutcomeThatAnswered() throws Exception {
    Outcome answered =
        Outcome.newBuilder()
            .setIdempotencyKey("k1")
            .setTenant("acme")
            .setTool("charge")
            .setAttempt(1)
            .setStatus(OutcomeStatus.SUCCEEDED)
            .setResultJson("{}")
            .setCompletedAt(NOW)
            .setRepliedTo(List.of("tool-results"))
            .build();
    byte[] wire =
        new RegistryAvroSerde<>(registry, Outcome.class).serialize("tool-outcomes", answered);

    GenericRecord read = readAsOld(wire, Outcome.class, v1("Outcome"));

    assertThat(read.get("status").toString()).isEqualTo("SUCCEEDED");
    assertThat(read.get("completedAt")).isEqualTo(NOW.toEpochMilli());
  }
}
