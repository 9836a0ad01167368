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
 * Plain Avro binary with the current schema on both sides, for data only this service writes (the
 * ledger store and its changelog).
 *
 * @param <T> the generated record type
 */
public final class AvroBinarySerde<T extends SpecificRecord> implements SelfSerde<T> {

  private static final byte[] NO_HEADER = new byte[0];

  private final Schema schema;
  private final SpecificDatumWriter<T> writer;
  private final SpecificDatumReader<T> reader;

  public AvroBinarySerde(Class<T> type) {
    this.schema = SpecificData.get().getSchema(type);
    this.writer = new SpecificDatumWriter<>(schema);
    this.reader = new SpecificDatumReader<>(schema);
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
    } catch (IOException | RuntimeException e) {
      throw new SerializationException(
          "Could not decode " + schema.getName() + " from " + topic, e);
    }
  }
}
