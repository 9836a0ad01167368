package dev.effectledger.schema.serde;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.avro.Schema;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.specific.SpecificData;
import org.apache.avro.specific.SpecificDatumReader;
import org.apache.avro.specific.SpecificDatumWriter;
import org.apache.avro.specific.SpecificRecord;
import org.apache.kafka.common.errors.SerializationException;

/**
 * Serde of one generated Avro record type in the Schema Registry wire format: magic byte {@code 0},
 * 4-byte big-endian schema id, Avro binary. The serializer registers the record's schema under
 * {@code <topic>-value}; the deserializer resolves the writer's schema by id against the record's
 * own schema, so older and newer compatible writers are read.
 *
 * @param <T> the generated record type
 */
public final class RegistryAvroSerde<T extends SpecificRecord> implements SelfSerde<T> {

  /** The first byte of every record in the wire format. */
  public static final byte MAGIC_BYTE = 0;

  /** Length of the wire-format header: magic byte and schema id. */
  public static final int HEADER_LENGTH = 5;

  private final SchemaRegistry registry;
  private final Schema readerSchema;

  /** Per topic, the wire-format header of its registered schema: magic byte and id. */
  private final Map<String, byte[]> headersByTopic = new ConcurrentHashMap<>();

  private final Map<Integer, SpecificDatumReader<T>> readersById = new ConcurrentHashMap<>();
  private final SpecificDatumWriter<T> writer;

  public RegistryAvroSerde(SchemaRegistry registry, Class<T> type) {
    this.registry = registry;
    this.readerSchema = SpecificData.get().getSchema(type);
    this.writer = new SpecificDatumWriter<>(readerSchema);
  }

  @Override
  public byte[] serialize(String topic, T data) {
    if (data == null) {
      return null;
    }
    byte[] header =
        headersByTopic.computeIfAbsent(
            topic,
            t ->
                ByteBuffer.allocate(HEADER_LENGTH)
                    .put(MAGIC_BYTE)
                    .putInt(registry.register(t + "-value", readerSchema))
                    .array());
    try {
      return Encoding.encode(writer, data, header);
    } catch (IOException | RuntimeException e) {
      throw new SerializationException(
          "Could not encode " + readerSchema.getName() + " for topic " + topic, e);
    }
  }

  @Override
  public T deserialize(String topic, byte[] bytes) {
    if (bytes == null) {
      return null;
    }
    if (bytes.length < HEADER_LENGTH || bytes[0] != MAGIC_BYTE) {
      throw new WireFormatException(
          WireFormatException.Reason.MALFORMED,
          "Record on "
              + topic
              + " is not in the Schema Registry wire format (expected magic byte 0"
              + " and a 4-byte schema id)");
    }
    int id = ByteBuffer.wrap(bytes, 1, 4).getInt();
    SpecificDatumReader<T> reader;
    try {
      reader = readersById.computeIfAbsent(id, this::readerFor);
    } catch (SchemaRegistryException e) {
      throw new WireFormatException(
          e.isNotFound()
              ? WireFormatException.Reason.UNKNOWN_SCHEMA_ID
              : WireFormatException.Reason.REGISTRY_UNAVAILABLE,
          "Record on " + topic + " names schema id " + id + ": " + e.getMessage(),
          e);
    }
    try {
      BinaryDecoder decoder =
          DecoderFactory.get()
              .binaryDecoder(bytes, HEADER_LENGTH, bytes.length - HEADER_LENGTH, null);
      T value = reader.read(null, decoder);
      if (!decoder.isEnd()) {
        throw new IOException((bytes.length - HEADER_LENGTH) + "-byte body has trailing bytes");
      }
      return value;
    } catch (IOException | RuntimeException e) {
      throw new WireFormatException(
          WireFormatException.Reason.MALFORMED,
          "Record on "
              + topic
              + " with schema id "
              + id
              + " is not a valid "
              + readerSchema.getName()
              + ": "
              + e.getMessage(),
          e);
    }
  }

  private SpecificDatumReader<T> readerFor(int id) {
    return new SpecificDatumReader<>(registry.schemaById(id), readerSchema);
  }
}
