package dev.effectledger.mcp.gateway;

import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The names under which the gateway lists what several upstreams list (tools, prompts): each under
 * its own name unless two upstreams have one of that name, then as {@code <upstream>_<name>}. A
 * name once given stays while its item is listed, so that a list change upstream never renames a
 * tool an agent (or a policy in tools.yaml) already uses: a newcomer whose name is taken is the one
 * prefixed.
 */
final class StableNames {

  private static final Logger log = LoggerFactory.getLogger(StableNames.class);

  /** An item of {@code upstream}. */
  record Owned<T>(String upstream, T item) {}

  private StableNames() {}

  /**
   * The gateway's names for {@code byUpstream} (upstreams in their configured order), keeping the
   * names {@code previous} gave to the items still listed.
   */
  static <T> LinkedHashMap<String, Owned<T>> assign(
      Map<String, List<T>> byUpstream,
      Function<T, String> ownName,
      Map<String, Owned<T>> previous) {
    Map<String, Integer> owners = new HashMap<>();
    Map<String, String> before = new HashMap<>();
    previous.forEach(
        (name, owned) -> before.put(id(owned.upstream(), ownName.apply(owned.item())), name));
    Set<String> taken = new HashSet<>();
    byUpstream.forEach(
        (upstream, items) ->
            items.forEach(
                item -> {
                  owners.merge(ownName.apply(item), 1, Integer::sum);
                  String kept = before.get(id(upstream, ownName.apply(item)));
                  if (kept != null) {
                    taken.add(kept);
                  }
                }));
    LinkedHashMap<String, Owned<T>> named = new LinkedHashMap<>();
    byUpstream.forEach(
        (upstream, items) -> {
          for (T item : items) {
            String own = ownName.apply(item);
            String name = before.get(id(upstream, own));
            if (name == null) {
              name = owners.get(own) > 1 || taken.contains(own) ? upstream + "_" + own : own;
              if (!taken.add(name)) {
                log.warn(
                    "Upstream {} lists {}, and the gateway already lists something as {}; it is"
                        + " left out: rename one upstream",
                    upstream,
                    own,
                    name);
                continue;
              }
            }
            named.put(name, new Owned<>(upstream, item));
          }
        });
    return named;
  }

  private static String id(String upstream, String own) {
    return upstream + '\u0000' + own;
  }
}
