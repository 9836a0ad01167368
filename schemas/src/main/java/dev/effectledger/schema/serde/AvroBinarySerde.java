package dev.effectledger.schema.serde;

import java.io.IOException;
import org.apache.avro.Schema;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.errors.SerializationException;

/**
 * Avro binary for data only this service writes (the ledger store and its changelog), which must
 * stay readable across releases: a store is restored from its changelog by whichever release runs
 * next. Each value starts with a two-byte header, {@code 0x01} and the number of fields of the
 * schema it was written with. The store's schema only ever grows by fields added at its end, each
 * with a default, so the writer's schema is the current one cut to that many fields, and Avro's
 * schema resolution fills in the rest. Values written before the header existed (no release wrote
 * it with a header before 2026-11) are read as the earlier schemas given at construction, the first
 * whose length reads the value's bytes exactly; they never start with {@code 0x01} (their first
 * field is a non-empty string, whose length is a positive even varint).
 *
 * <p>Hand-written rather than Schema Registry's wire format: the store's values have no topic a
 * registry would know them by, and a schema id per value would cost more than the two bytes.
 *
 * @param <T> the generated record type
 */
public final class AvroBinarySerde<T extends SpecificRecord> implements SelfSerde<T> {

  private static final byte MAGIC = 0x01;

  private final Schema schema;
  private final byte[] header;
  private final SpecificDatumWriter<T> writer;
  private final SpecificDatumReader<T> reader;
  private final java.util.Map<Integer, SpecificDatumReader<T>> earlier =
      new java.util.concurrent.ConcurrentHashMap<>();
  private final int[] headerless;

  /**
   * @param headerlessFieldCounts the field counts of the schemas values without a header were
   *     written with, tried from the first (give the longest first); none: every value has a header
   */
  public AvroBinarySerde(Class<T> type, int... headerlessFieldCounts) {
    this.schema = SpecificData.get().getSchema(type);
    if (schema.getFields().size() > 255) {
      throw new IllegalArgumentException(schema.getName() + " has more fields than a header holds");
    }
    this.header = new byte[] {MAGIC, (byte) schema.getFields().size()};
    this.writer = new SpecificDatumWriter<>(schema);
    this.reader = new SpecificDatumReader<>(schema);
    this.headerless = headerlessFieldCounts.clone();
  }

  @Override
  public byte[] serialize(String topic, T data) {
    if (data == null) {
      return null;
    }
    try {
      return Encoding.encode(writer, data, header);
    } catch (IOException e) {
      throw new SerializationException("Could not encode " + schema.getName(), e);
    }
  }

  @Override
  public T deserialize(String topic, byte[] bytes) {
    if (bytes == null) {
      return null;
    }
    try {
      if (bytes.length >= 2 && bytes[0] == MAGIC) {
        int fields = bytes[1] & 0xFF;
        var decoder = DecoderFactory.get().binaryDecoder(bytes, 2, bytes.length - 2, null);
        if (fields == schema.getFields().size()) {
          return reader.read(null, decoder);
        }
        if (fields > schema.getFields().size()) {
          throw new SerializationException(
              "A "
                  + schema.getName()
                  + " in "
                  + topic
                  + " was written by a newer release of Effect Ledger ("
                  + fields
                  + " fields, this one knows "
                  + schema.getFields().size()
                  + "); run that release or a later one");
        }
        return readerFor(fields).read(null, decoder);
      }
      for (int fields : headerless) {
        try {
          var decoder = DecoderFactory.get().binaryDecoder(bytes, null);
          T value = readerFor(fields).read(null, decoder);
          if (decoder.isEnd()) {
            return value;
          }
        } catch (IOException | RuntimeException e) {
          // not written with this schema: try the next
        }
      }
      throw new SerializationException(
          "A " + schema.getName() + " in " + topic + " matches none of the schemas it may have");
    } catch (IOException | RuntimeException e) {
      if (e instanceof SerializationException known) {
        throw known;
      }
      throw new SerializationException(
          "Could not decode " + schema.getName() + " from " + topic, e);
    }
  }

  /** A reader of values written with the current schema's first {@code fields} fields. */
  private SpecificDatumReader<T> readerFor(int fields) {
    if (fields == schema.getFields().size()) {
      return reader;
    }
    return earlier.computeIfAbsent(
        fields,
        n -> {
          java.util.List<Schema.Field> kept = new java.util.ArrayList<>();
          for (Schema.Field field : schema.getFields().subList(0, n)) {
            kept.add(new Schema.Field(field, field.schema()));
          }
          Schema writerSchema =
              Schema.createRecord(
                  schema.getName(), schema.getDoc(), schema.getNamespace(), false, kept);
          return new SpecificDatumReader<>(writerSchema, schema);
        });
  }
}
