package dev.effectledger.schema.serde;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.avro.Schema;

/**
 * A registry held in memory, for the embedded mode and tests. Ids are global and start at 1; the
 * same schema registered twice (under any subject) keeps its id, as the real registry does.
 */
public final class InMemorySchemaRegistry implements SchemaRegistry {

  private final Map<Schema, Integer> idsBySchema = new HashMap<>();
  private final List<Schema> schemasById = new ArrayList<>();
  private final Map<String, List<Integer>> versionsBySubject = new HashMap<>();

  @Override
  public synchronized int register(String subject, Schema schema) {
    Integer id = idsBySchema.get(schema);
    if (id == null) {
      schemasById.add(schema);
      id = schemasById.size();
      idsBySchema.put(schema, id);
    }
    List<Integer> versions = versionsBySubject.computeIfAbsent(subject, s -> new ArrayList<>());
    if (!versions.contains(id)) {
      versions.add(id);
    }
    return id;
  }

  @Override
  public synchronized Schema schemaById(int id) {
    if (id < 1 || id > schemasById.size()) {
      throw new SchemaRegistryException("Schema " + id + " not found", true);
    }
    return schemasById.get(id - 1);
  }

  /** Ids registered under {@code subject}, oldest first. */
  public synchronized List<Integer> versions(String subject) {
    return List.copyOf(versionsBySubject.getOrDefault(subject, List.of()));
  }
}
