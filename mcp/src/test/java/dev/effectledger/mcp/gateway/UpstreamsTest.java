package dev.effectledger.mcp.gateway;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class UpstreamsTest {

  /** One page of a paged list: its items and the cursor of the next page (null: the last). */
  private record Page(List<String> items, String next) {}

  @Test
  void shouldListEveryPageAskingWithEachCursorInTurn() {
    Map<String, Page> pages =
        Map.of(
            "", new Page(List.of("a", "b"), "c2"),
            "c2", new Page(List.of(), "c3"), // an empty page that is not the last
            "c3", new Page(List.of("c"), null));
    List<String> asked = new ArrayList<>();

    List<String> listed =
        Upstreams.pages(
            cursor -> {
              asked.add(String.valueOf(cursor));
              return pages.get(cursor == null ? "" : cursor);
            },
            Page::items,
            Page::next);

    assertThat(listed).containsExactly("a", "b", "c");
    assertThat(asked).containsExactly("null", "c2", "c3");
  }

  @Test
  void shouldAskOnceWhenTheFirstPageIsTheLast() {
    List<String> asked = new ArrayList<>();

    List<String> listed =
        Upstreams.pages(
            cursor -> {
              asked.add(String.valueOf(cursor));
              return new Page(List.of("only"), null);
            },
            Page::items,
            Page::next);

    assertThat(listed).containsExactly("only");
    assertThat(asked).containsExactly("null");
  }
}
