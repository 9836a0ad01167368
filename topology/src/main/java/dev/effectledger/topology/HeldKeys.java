package dev.effectledger.topology;

import dev.effectledger.schema.LedgerStore;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * The index of held keys: one index entry {@code [H][store key]} per UNKNOWN ledger entry, in the
 * deadline store ({@link LedgerStore#DEADLINES}), kept at each change into or out of UNKNOWN and
 * rebuilt with the deadline index when a task starts. Listing what waits for an operator reads
 * these entries only, never the whole ledger. An index entry may outlive its entry's hold for a
 * moment around a rebuild; readers check the entry's state.
 */
public final class HeldKeys {

  private static final byte PREFIX = 'H';

  /** The first possible held index key, inclusive. */
  public static final Bytes FIRST = Bytes.wrap(new byte[] {PREFIX});

  /** Past every held index key, as an inclusive range end: no store key starts with 0xFF. */
  public static final Bytes PAST_LAST = Bytes.wrap(new byte[] {PREFIX, (byte) 0xFF});

  private HeldKeys() {}

  /** The index key of the held entry under {@code storeKey}. */
  public static Bytes indexKey(String storeKey) {
    byte[] key = storeKey.getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[key.length + 1];
    out[0] = PREFIX;
    System.arraycopy(key, 0, out, 1, key.length);
    return Bytes.wrap(out);
  }

  /**
   * Up to {@code max} store keys of held entries in {@code deadlines} (a queryable view of the
   * deadline stores, e.g. every local task's), in store-key order.
   */
  public static List<String> list(ReadOnlyKeyValueStore<Bytes, byte[]> deadlines, int max) {
    List<String> keys = new ArrayList<>();
    try (KeyValueIterator<Bytes, byte[]> it = deadlines.range(FIRST, PAST_LAST)) {
      while (it.hasNext() && keys.size() < max) {
        byte[] key = it.next().key.get();
        keys.add(new String(key, 1, key.length - 1, StandardCharsets.UTF_8));
      }
    }
    return keys;
  }
}
