package dev.effectledger.schema.serde;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
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
 * next, and during a rolling upgrade tasks move between releases both ways. The store's schema only
 * ever grows by fields added at its end, each with a default. So a value is plain Avro binary of
 * the writer's schema, with no header: a release reads a value of a newer one as its own schema
 * (the newer trailing fields are left unread, as every release before this class did), and a value
 * of an older one, which its own schema cannot read to the end, as the earlier schemas given at
 * construction (the current schema cut to that many fields), filling in the later fields' defaults.
 *
 * <p>Hand-written rather than Schema Registry's wire format: the store's values have no topic a
 * registry would know them by, a schema id per value would cost bytes on every entry, and a header
 * would make the values unreadable to the releases before it during a rolling upgrade.
 *
 * @param <T> the generated record type
 */
public final class AvroBinarySerde<T extends SpecificRecord> implements SelfSerde<T> {

  private static final byte[] NO_HEADER = new byte[0];

  private final Schema schema;
  private final SpecificDatumWriter<T> writer;
  private final SpecificDatumReader<T> reader;
  private final List<SpecificDatumReader<T>> earlier = new ArrayList<>();

  /**
   * @param earlierFieldCounts the field counts of the schemas of earlier releases, longest first
   */
  public AvroBinarySerde(Class<T> type, int... earlierFieldCounts) {
    this.schema = SpecificData.get().getSchema(type);
    this.writer = new SpecificDatumWriter<>(schema);
    this.reader = new SpecificDatumReader<>(schema);
    for (int fields : earlierFieldCounts) {
      List<Schema.Field> kept = new ArrayList<>();
      for (Schema.Field field : schema.getFields().subList(0, fields)) {
        kept.add(new Schema.Field(field, field.schema()));
      }
      Schema writerSchema =
          Schema.createRecord(
              schema.getName(), schema.getDoc(), schema.getNamespace(), false, kept);
      earlier.add(new SpecificDatumReader<>(writerSchema, schema));
    }
  }

  @Override
  public byte[] serialize(String topic, T data) {
    if (data == null) {
      return null;
    }
    try {
      return Encoding.encode(writer, data, NO_HEADER);
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
      return reader.read(null, DecoderFactory.get().binaryDecoder(bytes, null));
    } catch (IOException | RuntimeException current) {
      // shorter than the current schema: a value of an earlier release
      for (SpecificDatumReader<T> older : earlier) {
        try {
          return older.read(null, DecoderFactory.get().binaryDecoder(bytes, null));
        } catch (IOException | RuntimeException e) {
          // not that one either
        }
      }
      throw new SerializationException(
          "Could not decode " + schema.getName() + " from " + topic, current);
    }
  }
}
