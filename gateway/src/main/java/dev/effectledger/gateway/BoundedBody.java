package dev.effectledger.gateway;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import org.eclipse.jetty.io.Content;

/**
 * Reads a request body asynchronously up to a limit, without failing the request when the limit is
 * passed. Jetty's {@code Content.Source.asByteArrayAsync(source, max)} fails the source itself on
 * overflow, which makes the server answer the request with its own 500 in a race with our 413 (seen
 * in GatewayIT); here the reader stops reading and the caller answers 413 and closes the
 * connection.
 */
final class BoundedBody {

  /** What became of the read. */
  interface Outcome {
    void body(byte[] bytes);

    void tooLarge();

    void unreadable(Throwable failure);
  }

  private final Content.Source source;
  private final int max;
  private final Outcome outcome;
  private final ByteArrayOutputStream bytes = new ByteArrayOutputStream();

  private BoundedBody(Content.Source source, int max, Outcome outcome) {
    this.source = source;
    this.max = max;
    this.outcome = outcome;
  }

  /** Reads {@code source} to its end, or until more than {@code max} bytes came. */
  static void read(Content.Source source, int max, Outcome outcome) {
    new BoundedBody(source, max, outcome).loop();
  }

  private void loop() {
    while (true) {
      Content.Chunk chunk = source.read();
      if (chunk == null) {
        source.demand(this::loop);
        return;
      }
      if (Content.Chunk.isFailure(chunk)) {
        outcome.unreadable(chunk.getFailure());
        return;
      }
      ByteBuffer buffer = chunk.getByteBuffer();
      boolean last = chunk.isLast();
      if (bytes.size() + buffer.remaining() > max) {
        chunk.release();
        outcome.tooLarge();
        return;
      }
      byte[] copy = new byte[buffer.remaining()];
      buffer.get(copy);
      bytes.write(copy, 0, copy.length);
      chunk.release();
      if (last) {
        outcome.body(bytes.toByteArray());
        return;
      }
    }
  }
}
