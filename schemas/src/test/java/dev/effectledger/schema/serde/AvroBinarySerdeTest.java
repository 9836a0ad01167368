package dev.effectledger.schema.serde;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.effectledger.schema.LedgerEntry;
import dev.effectledger.schema.LedgerState;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.time.Instant;
import java.util.List;
import org.apache.avro.Schema;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.EncoderFactory;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.kafka.common.errors.SerializationException;
import org.junit.jupiter.api.Test;

/**
 * The ledger store's values stay readable across releases: values of the first release's schema
 * (under {@code released/v1}), of the schema before the latest field, and of a newer release (its
 * trailing field left unread); and what this release writes is what the release before reads.
 */
class AvroBinarySerdeTest {

  private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

  private final AvroBinarySerde<LedgerEntry> serde =
      new AvroBinarySerde<>(LedgerEntry.class, 21, 18);

  private static LedgerEntry entry() {
    return LedgerEntry.newBuilder()
        .setIdempotencyKey("k1")
        .setTenant("acme")
        .setRunId("run")
        .setStepId("step")
        .setTool("charge_card")
        .setEffectKey("k1")
        .setArgumentsHash("sha256:x")
        .setArguments("{}")
        .setState(LedgerState.SUCCEEDED)
        .setAttempts(2)
        .setFirstSeenAt(T0)
        .setLastDispatchedAt(T0)
        .setCompletedAt(T0)
        .setResultJson("{\"id\":\"ch_1\"}")
        .setEffectId("ch_1")
        .setDispatchedTo(List.of("tool-results.a"))
        .setWaiters(List.of("tool-results.b"))
        .setIncarnation(7L)
        .setBypassesUsed(List.of("k1~bypass-00"))
        .build();
  }

  /** {@code entry} encoded under the schema of its first {@code fields} fields. */
  private static byte[] asWrittenWith(LedgerEntry entry, int fields) throws IOException {
    Schema current = LedgerEntry.getClassSchema();
    List<Schema.Field> kept =
        current.getFields().subList(0, fields).stream()
            .map(f -> new Schema.Field(f, f.schema()))
            .toList();
    return encode(
        entry, Schema.createRecord(current.getName(), null, current.getNamespace(), false, kept));
  }

  private static byte[] encode(LedgerEntry entry, Schema writer) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    BinaryEncoder encoder = EncoderFactory.get().binaryEncoder(out, null);
    new SpecificDatumWriter<LedgerEntry>(writer, SpecificData.getForClass(LedgerEntry.class))
        .write(entry, encoder);
    encoder.flush();
    return out.toByteArray();
  }

  /** The first release's schema of the store's values, as released. */
  private Schema released() throws IOException {
    Schema.Parser parser = new Schema.Parser();
    for (String type : List.of("LedgerState", "ErrorInfo", "LedgerEntry")) {
      try (var in = getClass().getResourceAsStream("/released/v1/" + type + ".avsc")) {
        parser.parse(in);
      }
    }
    return parser.getTypes().get("dev.effectledger.schema.LedgerEntry");
  }

  @Test
  void shouldReadWhatItWrites() {
    assertThat(serde.deserialize("t", serde.serialize("t", entry()))).isEqualTo(entry());
  }

  @Test
  void shouldReadAValueOfTheFirstReleaseWithTheLaterFieldsAtTheirDefaults() throws IOException {
    Schema released = released();
    // the store's schema grows only at its end: the first release's fields lead today's
    assertThat(released.getFields().stream().map(Schema.Field::name).toList())
        .isEqualTo(
            LedgerEntry.getClassSchema().getFields().subList(0, 18).stream()
                .map(Schema.Field::name)
                .toList());
    LedgerEntry read = serde.deserialize("t", encode(entry(), released));

    assertThat(read.getIdempotencyKey()).isEqualTo("k1");
    assertThat(read.getEffectId()).isEqualTo("ch_1");
    assertThat(read.getDispatchedTo()).isEmpty();
    assertThat(read.getIncarnation()).isNull();
    assertThat(read.getBypassesUsed()).isEmpty();
  }

  @Test
  void shouldReadAValueOfTheReleaseBeforeTheLatestField() throws IOException {
    LedgerEntry read = serde.deserialize("t", asWrittenWith(entry(), 21));

    assertThat(read.getWaiters()).containsExactly("tool-results.b");
    assertThat(read.getIncarnation()).isEqualTo(7L);
    assertThat(read.getBypassesUsed()).isEmpty();
  }

  @Test
  void shouldWriteWhatTheReleaseBeforeReadsAndReadWhatANewerOneWrites() throws IOException {
    // the release before reads a value of this one as its own 21 fields, the rest left unread
    byte[] now = serde.serialize("t", entry());
    assertThat(now).startsWith(asWrittenWith(entry(), 21));
    // a newer release's value: one more field at the end, left unread here
    byte[] newer = java.util.Arrays.copyOf(now, now.length + 3);
    newer[now.length] = 4; // a string of length 2
    newer[now.length + 1] = 'x';
    newer[now.length + 2] = 'y';
    assertThat(serde.deserialize("t", newer)).isEqualTo(entry());
  }

  @Test
  void shouldRefuseBytesNoReleaseWrote() {
    assertThatThrownBy(() -> serde.deserialize("changelog", new byte[] {(byte) 0x81}))
        .isInstanceOf(SerializationException.class)
        .hasMessageContaining("changelog");
  }
}
