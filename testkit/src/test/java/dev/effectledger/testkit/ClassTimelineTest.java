package dev.effectledger.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ClassTimelineTest {

  @TempDir Path dir;

  @Test
  void shouldReadTheSomeTotalOfAPressureFile() throws Exception {
    Path pressure = dir.resolve("io");
    Files.writeString(
        pressure,
        "some avg10=1.74 avg60=0.48 avg300=0.35 total=281640805\n"
            + "full avg10=1.66 avg60=0.40 avg300=0.22 total=153330534\n");
    assertThat(ClassTimeline.someStallMicros(pressure)).isEqualTo(281_640_805L);
  }

  @Test
  void shouldReadTheBytesAProcessCausedToBeWritten() throws Exception {
    Path io = dir.resolve("io");
    Files.writeString(
        io,
        "rchar: 6976\nwchar: 10\nsyscr: 10\nsyscw: 1\nread_bytes: 4096\n"
            + "write_bytes: 1048576\ncancelled_write_bytes: 0\n");
    assertThat(ClassTimeline.writtenBytes(io)).isEqualTo(1_048_576L);
  }

  @Test
  void shouldSayMinusOneWhereTheKernelKeepsNothing() throws Exception {
    assertThat(ClassTimeline.someStallMicros(dir.resolve("absent"))).isEqualTo(-1);
    Path garbled = dir.resolve("garbled");
    Files.writeString(garbled, "some avg10=1.0 total=lots\n");
    assertThat(ClassTimeline.someStallMicros(garbled)).isEqualTo(-1);
  }
}
