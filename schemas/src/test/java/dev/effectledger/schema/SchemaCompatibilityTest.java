package dev.effectledger.schema;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import org.apache.avro.Schema;
import org.apache.avro.SchemaCompatibility;
import org.apache.avro.SchemaCompatibility.SchemaCompatibilityType;
import org.apache.avro.specific.SpecificData;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every released schema version, kept under {@code released/vN/}, must stay fully compatible with
 * the current one: new readers read old records and old readers read new ones.
 */
class SchemaCompatibilityTest {

  /** Files in dependency order: referenced types first. */
  private static final List<String> FILES =
      List.of(
          "ErrorInfo",
          "ResultStatus",
          "OutcomeStatus",
          "LedgerState",
          "AuditType",
          "ToolIntent",
          "ToolResult",
          "Dispatch",
          "Outcome",
          "LedgerEntry",
          "AuditEvent");

  private static final List<String> RELEASES = List.of("v1");

  static List<String[]> releasedSchemas() {
    return RELEASES.stream().flatMap(v -> FILES.stream().map(f -> new String[] {v, f})).toList();
  }

  @ParameterizedTest(name = "{0}/{1}")
  @MethodSource("releasedSchemas")
  void shouldStayFullyCompatibleWithRelease(String release, String name) throws Exception {
    Schema released = parseRelease(release).getTypes().get("dev.effectledger.schema." + name);
    Schema current = SpecificData.get().getSchema(Class.forName("dev.effectledger.schema." + name));

    assertThat(compatibility(current, released))
        .as("current reads %s", release)
        .isEqualTo(SchemaCompatibilityType.COMPATIBLE);
    assertThat(compatibility(released, current))
        .as("%s reads current", release)
        .isEqualTo(SchemaCompatibilityType.COMPATIBLE);
  }

  private static SchemaCompatibilityType compatibility(Schema reader, Schema writer) {
    return SchemaCompatibility.checkReaderWriterCompatibility(reader, writer).getType();
  }

  static Schema.Parser parseRelease(String release) throws IOException {
    Schema.Parser parser = new Schema.Parser();
    for (String file : FILES) {
      try (InputStream in =
          SchemaCompatibilityTest.class.getResourceAsStream(
              "/released/" + release + "/" + file + ".avsc")) {
        assertThat(in).as("released schema %s/%s.avsc", release, file).isNotNull();
        parser.parse(in);
      }
    }
    return parser;
  }
}
