package dev.effectledger.schema.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.schema.ErrorInfo;
import dev.effectledger.schema.ToolIntent;
import java.io.ByteArrayOutputStream;
import java.time.Instant;
import java.util.Arrays;
import org.apache.avro.Schema;
import org.apache.avro.SchemaBuilder;
import org.apache.avro.generic.GenericData;
import org.apache.avro.generic.GenericDatumWriter;
import org.apache.avro.generic.GenericRecord;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.junit.jupiter.api.Test;

class RegistryAvroSerdeTest {

  private static ErrorInfo error(String code, String message, boolean retriable, String action) {
    return ErrorInfo.newBuilder()
        .setCode(code)
        .setMessage(message)
        .setRetriable(retriable)
        .setCorrectiveAction(action)
        .build();
  }

  /** Answers one fixed id for every registration, to pin the header bytes. */
  private static SchemaRegistry fixedId(int id, Schema schema) {
    return new SchemaRegistry() {
      @Override
      public int register(String subject, Schema s) {
        return id;
      }

      @Override
      public Schema schemaById(int requested) {
        if (requested != id) {
          throw new SchemaRegistryException("Schema " + requested + " not found", true);
        }
        return schema;
      }
    };
  }

  /**
   * The encoder and buffer are kept per thread: a record that fails half-way must not leave its
   * bytes in front of the next one, and a large record must not be cut or kept.
   */
  @Test
  void shouldEncodeEachRecordWholeAfterAFailedOneAndAfterALargeOne() {
    var serde = new RegistryAvroSerde<>(fixedId(258, ErrorInfo.getClassSchema()), ErrorInfo.class);
    ErrorInfo half = error("X", "m", true, "");
    half.setCorrectiveAction(null); // not nullable: the writer fails after writing three fields

    assertThatThrownBy(() -> serde.serialize("t", half))
        .isInstanceOf(org.apache.kafka.common.errors.SerializationException.class);
    byte[] after = serde.serialize("t", error("X", "m", true, ""));
    assertThat(after)
        .containsExactly(0x00, 0x00, 0x00, 0x01, 0x02, 0x02, 'X', 0x02, 'm', 0x01, 0x00);

    String large = "y".repeat(200_000);
    ErrorInfo big = serde.deserialize("t", serde.serialize("t", error("X", large, false, "")));
    assertThat(big.getMessage()).isEqualTo(large);
    assertThat(serde.serialize("t", error("X", "m", true, ""))).isEqualTo(after);
  }

  @Test
  void shouldWriteMagicByteBigEndianIdAndAvroBinary() {
    var serde = new RegistryAvroSerde<>(fixedId(258, ErrorInfo.getClassSchema()), ErrorInfo.class);

    byte[] bytes = serde.serialize("t", error("X", "m", true, ""));

    // magic 0, id 258 = 0x00000102, "X" = len 1 zigzag 0x02 + 'X', "m" = 0x02 'm', true = 1,
    // "" = len 0.
    assertThat(bytes)
        .containsExactly(0x00, 0x00, 0x00, 0x01, 0x02, 0x02, 'X', 0x02, 'm', 0x01, 0x00);
  }

  @Test
  void shouldRegisterUnderTopicValueSubjectOncePerTopic() {
    var registry = new InMemorySchemaRegistry();
    var serde = new RegistryAvroSerde<>(registry, ErrorInfo.class);

    byte[] first = serde.serialize("tool-results", error("A", "a", false, "x"));
    serde.serialize("tool-results", error("B", "b", false, "y"));

    assertThat(registry.versions("tool-results-value")).containsExactly(1);
    assertThat(Arrays.copyOfRange(first, 0, 5)).containsExactly(0, 0, 0, 0, 1);
  }

  @Test
  void shouldRoundTrip() {
    var serde = new RegistryAvroSerde<>(new InMemorySchemaRegistry(), ToolIntent.class);
    ToolIntent intent =
        ToolIntent.newBuilder()
            .setIdempotencyKey("v1:k")
            .setTenant("acme")
            .setRunId("r")
            .setStepId("s")
            .setTool("charge")
            .setArguments("{\"amount\":1}")
            .setArgumentsHash("h")
            .setRequestedAt(Instant.ofEpochMilli(42))
            .build();

    assertThat(serde.deserialize("tool-intents", serde.serialize("tool-intents", intent)))
        .isEqualTo(intent);
  }

  @Test
  void shouldRejectBytesWithoutMagicByte() {
    var serde = new RegistryAvroSerde<>(new InMemorySchemaRegistry(), ErrorInfo.class);

    assertThatThrownBy(() -> serde.deserialize("t", new byte[] {1, 0, 0, 0, 1, 2}))
        .isInstanceOfSatisfying(
            WireFormatException.class,
            e -> assertThat(e.reason()).isEqualTo(WireFormatException.Reason.MALFORMED))
        .hasMessageContaining("magic byte");
  }

  @Test
  void shouldRejectUnknownSchemaId() {
    var serde = new RegistryAvroSerde<>(new InMemorySchemaRegistry(), ErrorInfo.class);

    assertThatThrownBy(() -> serde.deserialize("t", new byte[] {0, 0, 0, 0, 99, 2, 'X'}))
        .isInstanceOfSatisfying(
            WireFormatException.class,
            e -> assertThat(e.reason()).isEqualTo(WireFormatException.Reason.UNKNOWN_SCHEMA_ID))
        .hasMessageContaining("schema id 99");
  }

  @Test
  void shouldRejectTruncatedAndTrailingBodies() {
    var registry = new InMemorySchemaRegistry();
    var serde = new RegistryAvroSerde<>(registry, ErrorInfo.class);
    byte[] good = serde.serialize("t", error("X", "m", true, ""));
    byte[] truncated = Arrays.copyOf(good, good.length - 3);
    byte[] trailing = Arrays.copyOf(good, good.length + 2);

    assertThatThrownBy(() -> serde.deserialize("t", truncated))
        .isInstanceOfSatisfying(
            WireFormatException.class,
            e -> assertThat(e.reason()).isEqualTo(WireFormatException.Reason.MALFORMED));
    assertThatThrownBy(() -> serde.deserialize("t", trailing))
        .isInstanceOf(WireFormatException.class)
        .hasMessageContaining("trailing");
  }

  @Test
  void shouldReadRecordWrittenWithOlderSchemaUsingDefaults() throws Exception {
    // An older ErrorInfo without correctiveAction would not be readable (no default), so use
    // ToolIntent's writer schema without the optional fields that carry defaults.
    Schema older =
        SchemaBuilder.record("ToolIntent")
            .namespace("dev.effectledger.schema")
            .fields()
            .requiredString("idempotencyKey")
            .requiredString("tenant")
            .requiredString("runId")
            .requiredString("stepId")
            .requiredString("tool")
            .requiredString("arguments")
            .requiredString("argumentsHash")
            .requiredLong("requestedAt")
            .endRecord();
    var registry = new InMemorySchemaRegistry();
    int id = registry.register("tool-intents-value", older);
    GenericRecord record = new GenericData.Record(older);
    for (String field :
        new String[] {
          "idempotencyKey", "tenant", "runId", "stepId", "tool", "arguments", "argumentsHash"
        }) {
      record.put(field, field + "-value");
    }
    record.put("requestedAt", 7L);
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(new byte[] {0, 0, 0, 0, (byte) id});
    BinaryEncoder encoder = EncoderFactory.get().directBinaryEncoder(out, null);
    new GenericDatumWriter<GenericRecord>(older).write(record, encoder);

    ToolIntent read =
        new RegistryAvroSerde<>(registry, ToolIntent.class)
            .deserialize("tool-intents", out.toByteArray());

    assertThat(read.getTool()).isEqualTo("tool-value");
    assertThat(read.getBusinessScope()).isEmpty();
    assertThat(read.getReplyTopic()).isNull();
    assertThat(read.getRequestedAt().toEpochMilli()).isEqualTo(7L);
  }
}
