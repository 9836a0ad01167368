package dev.effectledger.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.github.bucket4j.TimeMeter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class FairShareTest {

  private final AtomicLong nanos = new AtomicLong(1_000_000_000L);
  private final TimeMeter clock =
      new TimeMeter() {
        @Override
        public long currentTimeNanos() {
          return nanos.get();
        }

        @Override
        public boolean isWallClockBased() {
          return false;
        }
      };

  @Test
  void admitsATenantsRateAndRefusesAboveItWithTheWaitAndOthersUntouched() throws Exception {
    FairShare share = new FairShare(new FairShare.Limits(10, 10, 0, 0), Map.of(), clock);

    for (int i = 0; i < 10; i++) {
      share.admit("flood", "run").close();
    }
    assertThatThrownBy(() -> share.admit("flood", "run"))
        .isInstanceOfSatisfying(
            FairShare.OverLimit.class,
            e -> {
              assertThat(e.retryAfter()).isEqualTo(Duration.ofSeconds(1));
              assertThat(e.getMessage())
                  .contains("tenant flood is over its limit of 10 calls a second")
                  .contains("admitted in 100 ms");
            });
    share.admit("quiet", "run").close(); // another tenant's share is its own

    nanos.addAndGet(Duration.ofMillis(100).toNanos()); // one refilled
    share.admit("flood", "run").close();
    assertThatThrownBy(() -> share.admit("flood", "run")).isInstanceOf(FairShare.OverLimit.class);
  }

  @Test
  void boundsTheCallsWaitingPerTenantUntilTheirTicketsClose() throws Exception {
    FairShare share =
        new FairShare(
            FairShare.Limits.NONE, Map.of("acme", new FairShare.Limits(0, 0, 3, 0)), clock);
    List<FairShare.Ticket> open = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      open.add(share.admit("acme", null));
    }

    assertThat(share.waiting("acme")).isEqualTo(3);
    assertThatThrownBy(() -> share.admit("acme", null))
        .hasMessageContaining("has 3 calls waiting already");
    assertThat(share.waiting("acme")).as("a refused call holds no place").isEqualTo(3);
    share.admit("globex", null).close(); // no limits for others
    open.get(0).close();
    open.get(0).close(); // twice: once counted
    assertThat(share.waiting("acme")).isEqualTo(2);
    share.admit("acme", null);
    assertThat(share.waiting("acme")).isEqualTo(3);
  }

  @Test
  void limitsEachRunOfATenantOnItsOwn() throws Exception {
    FairShare share = new FairShare(new FairShare.Limits(0, 0, 0, 2), Map.of(), clock);

    share.admit("acme", "loop");
    share.admit("acme", "loop");
    assertThatThrownBy(() -> share.admit("acme", "loop"))
        .hasMessageContaining("run loop of tenant acme is over its limit of 2");
    share.admit("acme", "other"); // the tenant's other runs go on
    share.admit("globex", "loop"); // a run id is the tenant's own
  }

  @Test
  void admitsByTheTenantsLimitsAloneBeforeTheCallIsReadAndByTheRunsAfter() throws Exception {
    FairShare share = new FairShare(new FairShare.Limits(2, 2, 1, 1), Map.of(), clock);

    FairShare.Ticket first = share.admitTenant("acme");
    assertThatThrownBy(() -> share.admitTenant("acme"))
        .as("the tenant's one waiting place is taken")
        .hasMessageContaining("has 1 calls waiting already");
    first.close();
    share.admitRun("acme", "loop");
    assertThatThrownBy(() -> share.admitRun("acme", "loop"))
        .hasMessageContaining("run loop of tenant acme is over its limit of 1");
    share.admitTenant("acme").close(); // the second of its two a second
    assertThatThrownBy(() -> share.admitTenant("acme"))
        .hasMessageContaining("tenant acme is over its limit of 2 calls a second");
    assertThat(share.waiting("acme")).isZero();
  }

  @Test
  void givesBackTheRateOfACallRefusedAfterItWasAdmitted() throws Exception {
    FairShare share = new FairShare(new FairShare.Limits(1, 1, 5, 0), Map.of(), clock);

    FairShare.Ticket refusedLater = share.admitTenant("acme");
    assertThat(share.waiting("acme")).isEqualTo(1);
    refusedLater.giveBack(); // e.g. over its run's limit
    refusedLater.giveBack(); // twice: once given back
    assertThat(share.waiting("acme")).isZero();
    share.admitTenant("acme").close(); // the second a second is there again
    assertThatThrownBy(() -> share.admitTenant("acme"))
        .as("and only one")
        .isInstanceOf(FairShare.OverLimit.class);
  }
}
