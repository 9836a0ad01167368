package dev.effectledger.mcp.gateway;

import io.modelcontextprotocol.spec.McpSchema;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The progress of pass-through calls whose agent asked for it, relayed from the upstream back to
 * that agent. Agents' progress tokens are unique per session only, so each such call goes upstream
 * with a token of the gateway's own ({@link #open}), and what the upstream reports under it reaches
 * the agent under the agent's token until the call ends ({@link #finish}).
 *
 * <p>What is guaranteed: every notification the upstream sent before its result reaches the agent,
 * in the upstream's order, before the agent gets the result; none after it. How: {@link #relay} is
 * told of each notification by a {@link ProgressTap} on the upstream session's transport, in the
 * order the transport received it and before the SDK's client session hands the result of that call
 * back. It only queues the notification (that thread reads the upstream for every call, and an
 * agent may be slow to take what it is sent) and starts the call's sender, which sends the queue in
 * order on a thread of its own, one notification at a time. When the call's result is back, {@link
 * #finish} (on the calling thread, before the result is answered) sends what is still queued, then
 * ends the relay: nothing queued later is sent, so nothing follows the result. Its wait for a
 * sender busy with a slow agent is bounded: past it the result goes to the agent without the
 * notifications not sent yet (and a warning says so), and the one that sender is stuck on may reach
 * the agent after it.
 *
 * <p>Why not simpler: the MCP Java SDK's synchronous client (2.1.0) hands each notification to its
 * consumer as a task of its own on Reactor's {@code boundedElastic} pool, and completes the call's
 * result on the transport's thread at once ({@link ProgressTap} says where): two notifications of a
 * call ran in either order (the later dropped as not increasing), and one could still be on its way
 * when the result went back (sent after it, or dropped as the call had ended).
 */
final class ProgressRelay implements AutoCloseable {

  // the gateway's parts log under its name: one logger to configure for the whole gateway
  private static final Logger log = LoggerFactory.getLogger(McpGateway.class);

  /** How long a call's result waits for a sender busy with a slow agent. */
  static final Duration FINISH_WAIT = Duration.ofSeconds(10);

  /** The calls being relayed, by the token sent upstream. */
  private final Map<String, Relay> byToken = new ConcurrentHashMap<>();

  private final Executor senders;
  private final ExecutorService owned; // null: the senders are the caller's
  private final Duration finishWait;

  ProgressRelay() {
    this.owned = Executors.newCachedThreadPool(GatewayThreads.daemons("mcp-gateway-progress"));
    this.senders = owned;
    this.finishWait = FINISH_WAIT;
  }

  /** Sends on {@code senders}; a call's result waits at most {@code finishWait} for one. */
  ProgressRelay(Executor senders, Duration finishWait) {
    this.owned = null;
    this.senders = senders;
    this.finishWait = finishWait;
  }

  /**
   * One agent's progress: a queue in the upstream's order, and one sender at a time sending from
   * it. MCP requires progress to increase: one that does not (the upstream's mistake) is dropped.
   */
  private static final class Relay {
    private final Consumer<McpSchema.ProgressNotification> agent;
    private final Object agentToken;
    private final ArrayDeque<McpSchema.ProgressNotification> queued = new ArrayDeque<>(); // this
    private boolean sending; // a sender is started and has not found the queue empty; this
    private boolean ended; // guarded by this
    private final ReentrantLock sender = new ReentrantLock(); // held while sending from the queue
    private double last = Double.NEGATIVE_INFINITY; // guarded by sender

    Relay(Consumer<McpSchema.ProgressNotification> agent, Object agentToken) {
      this.agent = agent;
      this.agentToken = agentToken;
    }

    /** Queues {@code notification}; true when a sender has to be started for it. */
    synchronized boolean offer(McpSchema.ProgressNotification notification) {
      if (ended) {
        return false;
      }
      queued.add(notification);
      if (sending) {
        return false;
      }
      sending = true;
      return true;
    }

    /** A sender's work: what is queued, in order, until the queue is empty. */
    void sendQueued() {
      sender.lock();
      try {
        sendAll();
      } finally {
        sender.unlock();
      }
    }

    /** Could not start a sender: the next offer starts one, and {@link #end} sends the rest. */
    synchronized void notSending() {
      sending = false;
    }

    private void sendAll() { // holding sender
      while (true) {
        McpSchema.ProgressNotification next;
        synchronized (this) {
          next = queued.poll();
          if (next == null) {
            sending = false;
            return;
          }
        }
        send(next);
      }
    }

    private void send(McpSchema.ProgressNotification notification) { // holding sender
      double progress = notification.progress() == null ? 0 : notification.progress();
      if (progress <= last) {
        return;
      }
      last = progress;
      try {
        agent.accept(
            new McpSchema.ProgressNotification(
                agentToken,
                notification.progress(),
                notification.total(),
                notification.message(),
                notification.meta()));
      } catch (RuntimeException e) {
        log.debug("Could not relay progress to an agent that went away", e);
      }
    }

    /**
     * The call's result is back: sends what is still queued (waiting at most {@code wait} for a
     * sender that is sending), then takes nothing more.
     */
    void end(Duration wait) {
      boolean locked;
      try {
        locked = sender.tryLock(wait.toMillis(), TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        locked = false;
      }
      try {
        if (locked) {
          sendAll();
        }
      } finally {
        int unsent;
        synchronized (this) {
          ended = true;
          unsent = queued.size();
          queued.clear();
        }
        if (locked) {
          sender.unlock();
        } else {
          log.warn(
              "An agent did not take its call's progress within {}: its result goes to it"
                  + " without the {} notification(s) not sent yet",
              wait,
              unsent);
        }
      }
    }
  }

  /**
   * Relays to {@code agent}, under {@code agentToken}, the progress reported under the token this
   * returns: the one to send upstream instead of the agent's.
   */
  String open(Consumer<McpSchema.ProgressNotification> agent, Object agentToken) {
    String upstreamToken = "effectledger-" + UUID.randomUUID();
    byToken.put(upstreamToken, new Relay(agent, agentToken));
    return upstreamToken;
  }

  /**
   * The call sent upstream with {@code upstreamToken} has its result, not yet answered: what the
   * upstream reported before it reaches the agent now (bounded), and nothing more is relayed.
   */
  void finish(String upstreamToken) {
    Relay relay = byToken.remove(upstreamToken);
    if (relay != null) {
      relay.end(finishWait);
    }
  }

  /**
   * An upstream's progress, in the order the upstream sent it (on the thread reading the upstream:
   * it does not block), to the agent of the call it names, if that call is still running.
   */
  void relay(McpSchema.ProgressNotification notification) {
    Relay relay =
        notification.progressToken() == null
            ? null
            : byToken.get(notification.progressToken().toString());
    if (relay == null || !relay.offer(notification)) {
      return;
    }
    try {
      senders.execute(relay::sendQueued);
    } catch (RejectedExecutionException e) { // closing: the call's finish sends what is queued
      relay.notSending();
    }
  }

  /** Stops the senders: the gateway is closing. */
  @Override
  public void close() {
    if (owned != null) {
      owned.shutdownNow();
    }
  }
}
