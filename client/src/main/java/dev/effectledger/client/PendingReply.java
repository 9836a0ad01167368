package dev.effectledger.client;

import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import dev.effectledger.schema.Topics;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.Headers;

/**
 * One call waiting for the final reply to its intent. A call registers before it publishes (so that
 * no reply can slip past it), and so may see replies the ledger made before it read the intent. All
 * of them answer the call as well (a duplicate read later gets the same answer from the entry),
 * except a release's: the key is forgotten, and an intent read after the release starts the key's
 * next life. A release's reply therefore names the last intent the ledger had read ({@link
 * dev.effectledger.schema.Topics#INTENTS_THROUGH_HEADER}), and it answers this call only if its
 * intent's offset is at or below that. Until the broker has acknowledged the intent its offset is
 * unknown; a release that comes first is kept and decided when the offset arrives.
 *
 * <p>Used by this client's reply listener and by the HTTP gateway's calls.
 */
public final class PendingReply {

  private final CompletableFuture<ToolResult> result = new CompletableFuture<>();
  private long intentOffset = -1;
  private ToolResult release;
  private long releaseThrough = -1;

  /**
   * The last intent a release's reply answers ({@link Topics#INTENTS_THROUGH_HEADER}); null for a
   * reply without it, which answers every call waiting; -1 (none) when it cannot be read.
   */
  public static Long through(Headers headers) {
    Header header = headers.lastHeader(Topics.INTENTS_THROUGH_HEADER);
    if (header == null) {
      return null;
    }
    try {
      return Long.parseLong(new String(header.value(), StandardCharsets.US_ASCII));
    } catch (NumberFormatException e) {
      return -1L;
    }
  }

  /**
   * {@code reply} as the call whose intent had {@code myRequestId} reads it. A settled answer
   * (SUCCEEDED or FAILED) that names another intent's request id ({@code forRequestId}: the one
   * that started the key's life, {@link Topics#REQUEST_ID_HEADER}) answers a call that joined the
   * action in flight: for it, the answer is a replay, and says so. Anything else, or without both
   * ids (a ledger or executor of an earlier release, a client sending none), is as it came.
   */
  public static ToolResult asSeenBy(ToolResult reply, String forRequestId, String myRequestId) {
    boolean settled =
        reply.getStatus() == ResultStatus.SUCCEEDED || reply.getStatus() == ResultStatus.FAILED;
    if (!settled
        || reply.getReplayed()
        || forRequestId == null
        || myRequestId == null
        || forRequestId.equals(myRequestId)) {
      return reply;
    }
    return ToolResult.newBuilder(reply).setReplayed(true).build();
  }

  /** The offset the broker gave the call's intent; -1 until it did, or when it did not say. */
  public synchronized long intentOffset() {
    return intentOffset;
  }

  /** Completed with the final reply that answers this call. */
  public CompletableFuture<ToolResult> result() {
    return result;
  }

  /**
   * The broker took the call's intent at {@code offset} of its partition ({@code -1}: it did not
   * say, and no release answers the call).
   */
  public void published(long offset) {
    ToolResult answer = publish(offset);
    if (answer != null) {
      result.complete(answer);
    }
  }

  /**
   * As {@link #published}, but the release kept aside that answers the call, if any, is returned
   * instead of completing {@link #result()}: for a caller on a thread where the call's
   * continuations must not run (a producer's I/O thread), to complete it elsewhere.
   */
  public ToolResult publish(long offset) {
    synchronized (this) {
      intentOffset = offset;
      ToolResult answer =
          release != null && offset >= 0 && offset <= releaseThrough ? release : null;
      release = null;
      return answer;
    }
  }

  /**
   * A final reply for the call's key: {@code through} is null for a reply that answers every call
   * waiting, else the last intent the releasing ledger had read. True when it answered this call.
   */
  public boolean offer(ToolResult reply, Long through) {
    boolean answers;
    synchronized (this) {
      if (through == null || intentOffset >= 0 && intentOffset <= through) {
        answers = true;
      } else {
        if (intentOffset < 0 && through >= releaseThrough) {
          release = reply; // decided once the intent's offset is known
          releaseThrough = through;
        }
        answers = false;
      }
    }
    return answers && result.complete(reply);
  }
}
