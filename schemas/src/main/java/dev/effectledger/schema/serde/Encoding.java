package dev.effectledger.schema.serde;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import org.apache.avro.io.BinaryEncoder;
import org.apache.avro.io.DatumWriter;
import org.apache.avro.io.EncoderFactory;

/**
 * Avro binary encoding into a buffer and a buffered encoder kept per thread: Avro's direct encoder
 * writes each byte of each varint into the output stream on its own (a synchronized call each),
 * which showed in the ledger's profile; the buffered one hands the stream whole chunks.
 */
final class Encoding {

  /** A buffer grown past this by one large record is let go rather than kept for the thread. */
  private static final int KEEP_AT_MOST = 64 * 1024;

  private static final ThreadLocal<Buffer> BUFFERS = ThreadLocal.withInitial(Buffer::new);

  private Encoding() {}

  /** {@code header} (may be empty) followed by {@code datum} in Avro binary. */
  static <T> byte[] encode(DatumWriter<T> writer, T datum, byte[] header) throws IOException {
    Buffer buffer = BUFFERS.get();
    buffer.out.reset();
    buffer.out.write(header, 0, header.length);
    buffer.encoder = EncoderFactory.get().binaryEncoder(buffer.out, buffer.encoder);
    try {
      writer.write(datum, buffer.encoder);
      buffer.encoder.flush();
    } catch (IOException | RuntimeException e) {
      BUFFERS.remove(); // the encoder may hold part of the failed record
      throw e;
    }
    byte[] bytes = buffer.out.toByteArray();
    if (bytes.length > KEEP_AT_MOST) {
      BUFFERS.remove();
    }
    return bytes;
  }

  private static final class Buffer {
    final ByteArrayOutputStream out = new ByteArrayOutputStream(512);
    BinaryEncoder encoder;
  }
}
