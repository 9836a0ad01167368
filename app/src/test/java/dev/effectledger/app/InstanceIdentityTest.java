package dev.effectledger.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class InstanceIdentityTest {

  @TempDir Path dir;

  @Test
  void shouldGiveARestartTheIdentityItsPredecessorHeldAndTwoRunningProcessesTwo() {
    String first;
    String second;
    try (InstanceIdentity a = InstanceIdentity.claim(dir, "effectledger-executor");
        InstanceIdentity b = InstanceIdentity.claim(dir, "effectledger-executor")) {
      first = a.id();
      second = b.id();
      assertThat(first).isNotEqualTo(second).matches("[A-Za-z0-9._-]{1,200}");
    }
    // both gone (a kill -9 releases the lock as a close does): each slot keeps its identity
    try (InstanceIdentity again = InstanceIdentity.claim(dir, "effectledger-executor")) {
      assertThat(again.id()).isEqualTo(first);
      try (InstanceIdentity other = InstanceIdentity.claim(dir, "effectledger-executor")) {
        assertThat(other.id()).isEqualTo(second);
      }
    }
  }

  @Test
  void shouldSayWhatToDoWhenTheDirectoryCannotBeUsed() throws Exception {
    Path file = Files.writeString(dir.resolve("not-a-dir"), "x");
    assertThatThrownBy(() -> InstanceIdentity.claim(file.resolve("sub"), "executor"))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("executor.state.dir")
        .hasMessageContaining("executor.instance.id");
  }
}
