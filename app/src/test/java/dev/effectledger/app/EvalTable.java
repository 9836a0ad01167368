package dev.effectledger.app;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The agent-runtime eval's table (docs/integrating.md): runtime × scenario, with and without. */
final class EvalTable {

  private EvalTable() {}

  static String markdown(List<JsonNode> rows) {
    Map<String, JsonNode[]> byCell = new LinkedHashMap<>();
    for (JsonNode row : rows) {
      String cell = row.get("runtime").asText() + " | " + row.get("scenario").asText();
      byCell
              .computeIfAbsent(cell, c -> new JsonNode[2])[
              row.get("mode").asText().equals("ledger") ? 0 : 1] =
          row;
    }
    StringBuilder out =
        new StringBuilder(
            "| runtime | scenario | requests | with the ledger: effects per request | without: requests paid more than once (effects) | without: requests paid never | runs that reported a failed call (with / without) |\n"
                + "| --- | --- | --- | --- | --- | --- | --- |\n");
    byCell.forEach(
        (cell, pair) ->
            out.append("| ")
                .append(cell)
                .append(" | ")
                .append(pair[0] == null ? "" : pair[0].get("requests").asText())
                .append(" | ")
                .append(pair[0] == null ? "" : perRequest(pair[0]))
                .append(" | ")
                .append(
                    pair[1] == null
                        ? ""
                        : pair[1].get("more").asInt()
                            + " of "
                            + pair[1].get("requests").asInt()
                            + " ("
                            + pair[1].get("effects").asInt()
                            + ")")
                .append(" | ")
                .append(pair[1] == null ? "" : pair[1].get("none").asText())
                .append(" | ")
                .append(failed(pair[0]))
                .append(" / ")
                .append(failed(pair[1]))
                .append(" |\n"));
    rows.stream()
        .filter(r -> r.get("errors").size() > 0)
        .forEach(
            r ->
                out.append("\n")
                    .append(r.get("runtime").asText())
                    .append(" ")
                    .append(r.get("scenario").asText())
                    .append(" ")
                    .append(r.get("mode").asText())
                    .append(", first failure: ")
                    .append(r.get("errors").get(0).asText().replace("\n", " ")));
    return out.toString();
  }

  private static String failed(JsonNode row) {
    return row == null ? "" : String.valueOf(row.get("errors").size());
  }

  private static String perRequest(JsonNode row) {
    int once = row.get("once").asInt();
    int requests = row.get("requests").asInt();
    return once == requests
        ? "exactly 1 for all " + requests
        : once
            + " once, "
            + row.get("more").asInt()
            + " more, "
            + row.get("none").asInt()
            + " none";
  }
}
