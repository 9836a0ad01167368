package dev.effectledger.mcp;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.CountDownLatch;

/**
 * A stdio MCP server's input, telling when it ends: the client closing stdin ends the session, and
 * a local MCP server's process with it. (The SDK's stdio transport reads on its own threads and
 * lets no one know; a process that only waited on them would outlive its client.)
 */
public final class EndOfInput extends FilterInputStream {

  private final CountDownLatch ended = new CountDownLatch(1);

  public EndOfInput(InputStream in) {
    super(in);
  }

  @Override
  public int read() throws IOException {
    return seen(super.read());
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    return seen(super.read(b, off, len));
  }

  private int seen(int n) {
    if (n < 0) {
      ended.countDown();
    }
    return n;
  }

  /** Returns once the input has ended. */
  public void await() throws InterruptedException {
    ended.await();
  }
}
