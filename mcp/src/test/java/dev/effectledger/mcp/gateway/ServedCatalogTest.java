package dev.effectledger.mcp.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ServedCatalogTest {

  private final List<String> server = new ArrayList<>();

  private void sync(Map<String, String> before, Map<String, String> after) {
    ServedCatalog.sync(
        before,
        after,
        name -> server.add("remove " + name),
        (name, item) -> server.add("add " + name + "=" + item));
  }

  private static Map<String, String> of(String... namesAndItems) {
    Map<String, String> map = new LinkedHashMap<>();
    for (int i = 0; i < namesAndItems.length; i += 2) {
      map.put(namesAndItems[i], namesAndItems[i + 1]);
    }
    return map;
  }

  @Test
  void shouldLeaveWhatDidNotChangeAlone() {
    sync(of("search", "v1", "charge", "v1"), of("search", "v1", "charge", "v1"));

    assertThat(server).isEmpty();
  }

  @Test
  void shouldRemoveWhatIsGoneAndAddWhatIsNew() {
    sync(of("search", "v1", "refund", "v1"), of("search", "v1", "charge", "v1"));

    assertThat(server).containsExactly("remove refund", "add charge=v1");
  }

  @Test
  void shouldReplaceAChangedItemRemovingItBeforeAnythingIsAdded() {
    sync(of("search", "v1", "charge", "v1"), of("export", "v1", "search", "v2", "charge", "v1"));

    // every removal first: the server never has two items of one name
    assertThat(server).containsExactly("remove search", "add export=v1", "add search=v2");
  }

  @Test
  void shouldServeEverythingAtFirstAndNothingOnceEverythingIsGone() {
    sync(Map.of(), of("search", "v1"));
    sync(of("search", "v1"), Map.of());

    assertThat(server).containsExactly("add search=v1", "remove search");
  }
}
