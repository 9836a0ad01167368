package dev.effectledger.gateway;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.function.Consumer;
import org.eclipse.jetty.http.HttpVersion;
import org.eclipse.jetty.io.AbstractEndPoint;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.io.EofException;
import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.util.BufferUtil;
import org.eclipse.jetty.util.Callback;

/**
 * Notices an HTTP/1.x caller that closed its connection while its call waits for the answer.
 *
 * <p>Over HTTP/2 a caller that goes away resets its streams or drops the connection, which the
 * server reads at all times, and Jetty tells the request's failure listeners. An HTTP/1.1
 * connection is not read while its request is handled, so without this a vanished caller is seen
 * only when its answer is written, up to the wait bound later, and meanwhile its call holds a
 * socket and a few kilobytes (measured with {@code bench/run gateway}: 10,000 calls whose callers
 * were killed still waited a minute later). Like Go's net/http, this reads the connection while the
 * call waits: the end of the stream, or an error, means the caller is gone (a caller that only
 * shuts down its sending side after its request is taken for gone too, as Go's server takes it; no
 * common HTTP client does that). Jetty has no option for it, hence this class.
 *
 * <p>Bytes instead of the end of the stream mean the caller pipelined its next request onto the
 * connection before the answer (rare; no common agent client does). They cannot be handed back to
 * Jetty's parser, so the watch stops and the connection is closed after the answer, as RFC 9112
 * (9.3.2) lets a server do; the caller sends the lost request again.
 */
final class HangUpWatch implements Callback {

  private static final HangUpWatch NONE = new HangUpWatch(null, x -> {});
  private static final Throwable STOPPED = new Throwable("stopped", null, false, false) {};

  private final EndPoint endPoint;
  private final Consumer<Throwable> onHangUp;
  private final Object lock = new Object();
  private boolean watching; // guarded by lock
  private boolean pipelined; // guarded by lock

  private HangUpWatch(EndPoint endPoint, Consumer<Throwable> onHangUp) {
    this.endPoint = endPoint;
    this.onHangUp = onHangUp;
  }

  /**
   * Watches {@code request}'s connection, if it is HTTP/1.x and nothing else reads it, until {@link
   * #stop}; {@code onHangUp} runs once if the caller closes it first. The request's body must have
   * been read to its end.
   */
  static HangUpWatch start(Request request, Consumer<Throwable> onHangUp) {
    HttpVersion version = request.getConnectionMetaData().getHttpVersion();
    if (version != HttpVersion.HTTP_1_1 && version != HttpVersion.HTTP_1_0) {
      return NONE;
    }
    if (!(request.getConnectionMetaData().getConnection().getEndPoint()
        instanceof AbstractEndPoint endPoint)) {
      return NONE;
    }
    HangUpWatch watch = new HangUpWatch(endPoint, onHangUp);
    synchronized (watch.lock) {
      watch.watching = endPoint.tryFillInterested(watch);
    }
    return watch;
  }

  /** The connection is readable: its end, an error, or the caller's next request. */
  @Override
  public void succeeded() {
    Throwable gone = null;
    synchronized (lock) {
      if (!watching) {
        return;
      }
      try {
        ByteBuffer one = BufferUtil.allocate(1);
        int read = endPoint.fill(one);
        if (read < 0) {
          watching = false;
          gone = new EofException("the caller closed the connection while its call waited");
        } else if (read == 0) {
          watching = endPoint.tryFillInterested(this); // woken without data (TLS, say)
        } else {
          watching = false;
          pipelined = true;
        }
      } catch (IOException e) {
        watching = false;
        gone = e;
      }
    }
    if (gone != null) {
      onHangUp.accept(gone);
    }
  }

  /** The connection failed or closed, or {@link #stop} withdrew the watch. */
  @Override
  public void failed(Throwable failure) {
    boolean was;
    synchronized (lock) {
      was = watching;
      watching = false;
    }
    if (was) { // not after stop(), which clears watching first
      onHangUp.accept(failure);
    }
  }

  @Override
  public InvocationType getInvocationType() {
    return InvocationType.BLOCKING; // the hang-up ends the call: on the server's threads
  }

  /**
   * Stops watching, before the answer is written (Jetty reads the connection again after it).
   * Returns true if the caller sent bytes meanwhile: the connection must close after the answer.
   */
  boolean stop() {
    if (this == NONE) {
      return false;
    }
    synchronized (lock) {
      if (watching) {
        watching = false;
        ((AbstractEndPoint) endPoint).getFillInterest().onFail(STOPPED);
      }
      return pipelined;
    }
  }
}
