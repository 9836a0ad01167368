package dev.effectledger.mcp.gateway;

import java.util.concurrent.ThreadFactory;

/** The gateway's background threads: daemons, named for what they do. */
final class GatewayThreads {

  private GatewayThreads() {}

  /** Daemon threads named {@code name}: they never keep a closing JVM alive. */
  static ThreadFactory daemons(String name) {
    return r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    };
  }
}
