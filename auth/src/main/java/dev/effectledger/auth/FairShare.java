package dev.effectledger.auth;

import io.github.bucket4j.Bucket;
import io.github.bucket4j.ConsumptionProbe;
import io.github.bucket4j.TimeMeter;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Each tenant's fair share of a door: intents a second (a token bucket per tenant, and one per run
 * of a tenant) and calls waiting for their answer at once. A call over a limit is refused before
 * anything is written to Kafka, with how long to wait ({@link OverLimit#retryAfter()}), so that an
 * agent that loops slows only its own tenant. The buckets are Bucket4j's; what is counted is this
 * door's only (each instance of a gateway has its own share: a tenant's limit across N instances is
 * N times it).
 */
public final class FairShare {

  /**
   * One tenant's limits; 0 turns a limit off.
   *
   * @param intentsPerSecond calls a second, refilled evenly
   * @param burst calls at once above the rate (the bucket's size; at least the rate)
   * @param waiting calls waiting for their answer at once
   * @param runIntentsPerSecond calls a second of any one run of the tenant
   */
  public record Limits(long intentsPerSecond, long burst, int waiting, long runIntentsPerSecond) {

    public static final Limits NONE = new Limits(0, 0, 0, 0);

    public Limits {
      if (intentsPerSecond < 0 || burst < 0 || waiting < 0 || runIntentsPerSecond < 0) {
        throw new IllegalArgumentException("limits must not be negative");
      }
    }

    boolean none() {
      return intentsPerSecond == 0 && waiting == 0 && runIntentsPerSecond == 0;
    }

    /**
     * Reads {@code intents-per-second}, {@code burst}, {@code waiting} and {@code
     * run-intents-per-second} from {@code setting} (null: not set, {@code otherwise}'s).
     *
     * @param where how the settings are named to an operator, e.g. {@code gateway.limits.default.}
     * @throws IllegalArgumentException naming the setting that is not a whole number of 0 or more
     */
    public static Limits read(
        java.util.function.Function<String, String> setting, String where, Limits otherwise) {
      return new Limits(
          number(setting, where, "intents-per-second", otherwise.intentsPerSecond()),
          number(setting, where, "burst", otherwise.burst()),
          (int) Math.min(Integer.MAX_VALUE, number(setting, where, "waiting", otherwise.waiting())),
          number(setting, where, "run-intents-per-second", otherwise.runIntentsPerSecond()));
    }

    private static long number(
        java.util.function.Function<String, String> setting,
        String where,
        String name,
        long otherwise) {
      String text = setting.apply(name);
      if (text == null || text.isBlank()) {
        return otherwise;
      }
      try {
        long value = Long.parseLong(text.trim());
        if (value >= 0) {
          return value;
        }
      } catch (NumberFormatException e) {
        // named below
      }
      throw new IllegalArgumentException(
          where + name + " must be a whole number of 0 or more (0: no limit), was " + text);
    }
  }

  /** A call refused for its tenant's share; nothing of it was done. */
  public static final class OverLimit extends Exception {
    private final Duration retryAfter;

    OverLimit(String message, Duration retryAfter) {
      super(message);
      this.retryAfter = retryAfter;
    }

    /** How long until a call of the tenant (or run) would be admitted; at least a second. */
    public Duration retryAfter() {
      return retryAfter;
    }
  }

  /** An admitted call's place among its tenant's waiting calls: closed when it is answered. */
  public interface Ticket extends AutoCloseable {
    @Override
    void close();

    /**
     * Closes the ticket and gives back the call a second it took: for a call refused after it was
     * admitted (over its run's limit), so that a run looping over its own limit does not use up its
     * tenant's share.
     */
    default void giveBack() {
      close();
    }
  }

  private static final Ticket FREE = () -> {};
  private static final int MAX_RUNS = 10_000;

  private final Limits defaults;
  private final Map<String, Limits> byTenant;
  private final TimeMeter time;
  private final Map<String, Bucket> tenants = new ConcurrentHashMap<>();
  private final Map<String, AtomicInteger> waiting = new ConcurrentHashMap<>();
  // the runs seen last, each with its bucket: a run not seen for a while starts afresh
  private final Map<String, Bucket> runs =
      new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Bucket> eldest) {
          return size() > MAX_RUNS;
        }
      };

  FairShare(Limits defaults, Map<String, Limits> byTenant, TimeMeter time) {
    this.defaults = defaults;
    this.byTenant = Map.copyOf(byTenant);
    this.time = time;
  }

  /** {@code defaults} for every tenant, {@code byTenant} for those named. */
  public static FairShare of(Limits defaults, Map<String, Limits> byTenant) {
    return new FairShare(defaults, byTenant, TimeMeter.SYSTEM_NANOTIME);
  }

  /**
   * Reads {@code <prefix>default.*} (every tenant's) and {@code <prefix>tenant.<tenant>.*} (one
   * tenant's, its unset limits the defaults') from {@code settings}; see {@link Limits#read}.
   */
  public static FairShare read(java.util.Properties settings, String prefix) {
    Limits defaults =
        Limits.read(
            name -> settings.getProperty(prefix + "default." + name),
            prefix + "default.",
            Limits.NONE);
    Map<String, Limits> tenants = new java.util.TreeMap<>();
    String tenantPrefix = prefix + "tenant.";
    for (String key : settings.stringPropertyNames()) {
      if (key.startsWith(tenantPrefix)) {
        String rest = key.substring(tenantPrefix.length());
        int dot = rest.lastIndexOf('.');
        if (dot <= 0) {
          throw new IllegalArgumentException(key + ": use " + tenantPrefix + "<tenant>.<limit>");
        }
        String tenant = rest.substring(0, dot);
        String where = tenantPrefix + tenant + ".";
        tenants.computeIfAbsent(
            tenant, t -> Limits.read(name -> settings.getProperty(where + name), where, defaults));
      }
    }
    for (String key : settings.stringPropertyNames()) {
      if (key.startsWith(prefix)) {
        String limit = key.substring(key.lastIndexOf('.') + 1);
        if (!java.util.Set.of("intents-per-second", "burst", "waiting", "run-intents-per-second")
            .contains(limit)) {
          throw new IllegalArgumentException(
              key + ": unknown limit (intents-per-second, burst, waiting, run-intents-per-second)");
        }
      }
    }
    return of(defaults, tenants);
  }

  /** No limits at all. */
  public static FairShare none() {
    return of(Limits.NONE, Map.of());
  }

  /** The limits of {@code tenant}. */
  public Limits limits(String tenant) {
    return byTenant.getOrDefault(tenant, defaults);
  }

  /**
   * Admits a call of {@code tenant} in {@code run} (null: none), or refuses it: {@link #admitRun},
   * then {@link #admitTenant}.
   *
   * @return its place among the tenant's waiting calls, to close once it is answered
   */
  public Ticket admit(String tenant, String run) throws OverLimit {
    admitRun(tenant, run);
    return admitTenant(tenant);
  }

  /**
   * Admits a call of {@code tenant} by the tenant's own limits (calls a second, calls waiting), or
   * refuses it: what a door can check before it reads the call itself, so that refusing a flood
   * costs as little as it can.
   *
   * @return its place among the tenant's waiting calls, to close once it is answered
   */
  public Ticket admitTenant(String tenant) throws OverLimit {
    Limits limits = limits(tenant);
    if (limits.none()) {
      return FREE;
    }
    // a place among the waiting first, so that a call refused for it takes none of the rate
    AtomicInteger count =
        limits.waiting() == 0 ? null : waiting.computeIfAbsent(tenant, t -> new AtomicInteger());
    if (count != null && count.incrementAndGet() > limits.waiting()) {
      count.decrementAndGet();
      throw new OverLimit(
          "tenant " + tenant + " has " + limits.waiting() + " calls waiting already, its limit",
          Duration.ofSeconds(1));
    }
    Bucket bucket = null;
    if (limits.intentsPerSecond() > 0) {
      bucket =
          tenants.computeIfAbsent(
              tenant,
              t ->
                  bucket(
                      limits.intentsPerSecond(),
                      Math.max(limits.burst(), limits.intentsPerSecond())));
      try {
        take(bucket, "tenant " + tenant, limits.intentsPerSecond(), "calls a second");
      } catch (OverLimit over) {
        if (count != null) {
          count.decrementAndGet();
        }
        throw over;
      }
    }
    return new Place(count, bucket);
  }

  /** An admitted call's place: its tenant's waiting count and the rate's bucket it took from. */
  private static final class Place implements Ticket {
    private final AtomicInteger count; // null: no waiting limit
    private final Bucket bucket; // null: no rate limit
    private final AtomicBoolean closed = new AtomicBoolean();

    Place(AtomicInteger count, Bucket bucket) {
      this.count = count;
      this.bucket = bucket;
    }

    @Override
    public void close() {
      end(false);
    }

    @Override
    public void giveBack() {
      end(true);
    }

    private void end(boolean giveBack) {
      if (!closed.compareAndSet(false, true)) {
        return; // ended already: a place and a second are given back once
      }
      if (count != null) {
        count.decrementAndGet();
      }
      if (giveBack && bucket != null) {
        bucket.addTokens(1);
      }
    }
  }

  /**
   * Admits a call of {@code tenant}'s {@code run} (null: none) by the run's limit, or refuses it.
   */
  public void admitRun(String tenant, String run) throws OverLimit {
    Limits limits = limits(tenant);
    if (limits.runIntentsPerSecond() == 0 || run == null) {
      return;
    }
    Bucket bucket;
    synchronized (runs) {
      bucket =
          runs.computeIfAbsent(
              tenant + '\u0000' + run,
              r -> bucket(limits.runIntentsPerSecond(), limits.runIntentsPerSecond()));
    }
    take(
        bucket,
        "run " + run + " of tenant " + tenant,
        limits.runIntentsPerSecond(),
        "calls a second");
  }

  /** Calls of {@code tenant} waiting now. */
  public int waiting(String tenant) {
    AtomicInteger count = waiting.get(tenant);
    return count == null ? 0 : count.get();
  }

  private Bucket bucket(long perSecond, long size) {
    return Bucket.builder()
        .addLimit(limit -> limit.capacity(size).refillGreedy(perSecond, Duration.ofSeconds(1)))
        .withCustomTimePrecision(time)
        .build();
  }

  private static void take(Bucket bucket, String whose, long limit, String what) throws OverLimit {
    ConsumptionProbe probe = bucket.tryConsumeAndReturnRemaining(1);
    if (!probe.isConsumed()) {
      long nanos = probe.getNanosToWaitForRefill();
      Duration wait = Duration.ofNanos(nanos);
      // Retry-After is in whole seconds: round up, at least one
      Duration seconds = Duration.ofSeconds(Math.max(1, (nanos + 999_999_999L) / 1_000_000_000L));
      throw new OverLimit(
          whose
              + " is over its limit of "
              + limit
              + " "
              + what
              + "; the next is admitted in "
              + wait.toMillis()
              + " ms",
          seconds);
    }
  }
}
