package dev.effectledger.app;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * A process identity that survives restarts on the same host or volume, for an executor started
 * without {@code executor.instance.id}: Kafka Streams keeps its process id in its state directory
 * for the same reason. The directory holds slots ({@code slot-N.id} with the identity, {@code
 * slot-N.lock} locked by the process using it); a process takes the first slot no live process
 * holds, so a restarted executor takes back the identity its killed predecessor held (the lock died
 * with it), while two executors running on one host at once get two. With the identity the executor
 * is a static member of its group and its transactional id is stable: a restart fences its
 * predecessor and aborts what it left open at once, instead of leaving its partitions for the
 * session timeout and read_committed readers for its transaction timeout (issue 52: ~70 s).
 *
 * <p>Hand-written: it is one file lock per slot (java.nio), which no library wraps for this.
 */
final class InstanceIdentity implements AutoCloseable {

  /** Slots one directory offers: executors of one group on one host at once. */
  static final int SLOTS = 64;

  private static final Pattern VALID = Pattern.compile("[A-Za-z0-9._-]{1,200}");

  private final String id;
  private final FileChannel channel;
  private final FileLock lock;

  private InstanceIdentity(String id, FileChannel channel, FileLock lock) {
    this.id = id;
    this.channel = channel;
    this.lock = lock;
  }

  /** The identity this process holds until {@link #close}. */
  String id() {
    return id;
  }

  /**
   * Takes the first free slot of {@code dir} (made when missing), creating its identity ({@code
   * <prefix>-<random>}) on first use.
   *
   * @throws IllegalStateException when the directory cannot be used, saying which and what to do
   */
  static InstanceIdentity claim(Path dir, String prefix) {
    try {
      Files.createDirectories(dir);
      for (int slot = 0; slot < SLOTS; slot++) {
        FileChannel channel =
            FileChannel.open(
                dir.resolve("slot-" + slot + ".lock"),
                StandardOpenOption.CREATE,
                StandardOpenOption.WRITE);
        FileLock lock;
        try {
          lock = channel.tryLock();
        } catch (OverlappingFileLockException e) {
          lock = null; // held by this very JVM
        }
        if (lock == null) {
          channel.close();
          continue;
        }
        try {
          return new InstanceIdentity(identity(dir, slot, prefix), channel, lock);
        } catch (IOException | RuntimeException e) {
          lock.release();
          channel.close();
          throw e;
        }
      }
      throw new IllegalStateException(
          "All "
              + SLOTS
              + " instance slots of "
              + dir
              + " are held by running executors; set executor.instance.id, or another"
              + " executor.state.dir");
    } catch (IOException | UncheckedIOException e) {
      throw new IllegalStateException(
          "Could not keep the executor's identity in "
              + dir
              + " ("
              + e.getMessage()
              + "); make it writable, set executor.state.dir to a directory that is, or set"
              + " executor.instance.id",
          e);
    }
  }

  /** The identity kept in slot {@code slot} of {@code dir}, made on its first use. */
  private static String identity(Path dir, int slot, String prefix) throws IOException {
    Path idFile = dir.resolve("slot-" + slot + ".id");
    String id = Files.exists(idFile) ? Files.readString(idFile).trim() : "";
    if (VALID.matcher(id).matches()) {
      return id;
    }
    byte[] random = new byte[4];
    new SecureRandom().nextBytes(random);
    id = sanitize(prefix) + "-" + HexFormat.of().formatHex(random) + "-" + slot;
    Path tmp = dir.resolve("slot-" + slot + ".id.tmp");
    Files.writeString(tmp, id + "\n", StandardCharsets.UTF_8);
    Files.move(
        tmp,
        idFile,
        java.nio.file.StandardCopyOption.REPLACE_EXISTING,
        java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    return id;
  }

  private static String sanitize(String prefix) {
    String clean = prefix.replaceAll("[^A-Za-z0-9._-]", "-");
    return clean.isEmpty() ? "executor" : clean.substring(0, Math.min(clean.length(), 100));
  }

  @Override
  public void close() {
    try {
      lock.release();
      channel.close();
    } catch (IOException e) {
      // the lock goes with the process anyway
    }
  }
}
