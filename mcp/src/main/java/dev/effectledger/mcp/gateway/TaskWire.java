package dev.effectledger.mcp.gateway;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JavaType;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializerProvider;
import com.fasterxml.jackson.databind.annotation.JsonAppend;
import com.fasterxml.jackson.databind.cfg.MapperConfig;
import com.fasterxml.jackson.databind.introspect.AnnotatedClass;
import com.fasterxml.jackson.databind.introspect.BeanPropertyDefinition;
import com.fasterxml.jackson.databind.ser.VirtualBeanPropertyWriter;
import com.fasterxml.jackson.databind.util.Annotations;
import io.modelcontextprotocol.spec.McpSchema;
import java.util.Map;

/**
 * What the gateway writes to its agents about tasks (MCP 2025-11-25) that the MCP Java SDK 2.1.0
 * has no field for: the server's {@code tasks} capability (tool calls as tasks, listed and
 * cancellable) and each tool's {@code execution.taskSupport} ({@code optional}: the gateway runs
 * any call as a task, see {@link AgentTasks}). Added by Jackson mix-ins to the records the SDK's
 * server writes ({@link McpSchema.ServerCapabilities}, {@link McpSchema.Tool}) on the gateway's own
 * mapper ({@link #mapper}), so they reach the agent on every transport as the SDK sends them.
 */
final class TaskWire {

  private TaskWire() {}

  /** The capability the gateway declares. */
  static final Map<String, Object> TASKS =
      Map.of(
          "list",
          Map.of(),
          "cancel",
          Map.of(),
          "requests",
          Map.of("tools", Map.of("call", Map.of())));

  /** Each tool's execution. */
  static final Map<String, Object> EXECUTION = Map.of("taskSupport", "optional");

  /** The mapper the gateway's MCP server writes with: the SDK's records, with tasks. */
  static ObjectMapper mapper() {
    ObjectMapper mapper = new ObjectMapper();
    mapper.addMixIn(McpSchema.ServerCapabilities.class, CapabilitiesWithTasks.class);
    mapper.addMixIn(McpSchema.Tool.class, ToolWithExecution.class);
    return mapper;
  }

  @JsonAppend(props = @JsonAppend.Prop(value = Tasks.class, name = "tasks", type = Map.class))
  interface CapabilitiesWithTasks {}

  @JsonAppend(
      props = @JsonAppend.Prop(value = Execution.class, name = "execution", type = Map.class))
  interface ToolWithExecution {}

  /** A property whose value is fixed; Jackson builds one per mix-in through the no-arg form. */
  abstract static class Fixed extends VirtualBeanPropertyWriter {
    private final Map<String, Object> value;

    Fixed(Map<String, Object> value) {
      this.value = value;
    }

    Fixed(
        Map<String, Object> value,
        BeanPropertyDefinition property,
        Annotations annotations,
        JavaType type) {
      super(property, annotations, type);
      this.value = value;
    }

    @Override
    protected Object value(Object bean, JsonGenerator generator, SerializerProvider provider) {
      return value;
    }
  }

  static final class Tasks extends Fixed {
    Tasks() {
      super(TASKS);
    }

    Tasks(BeanPropertyDefinition property, Annotations annotations, JavaType type) {
      super(TASKS, property, annotations, type);
    }

    @Override
    public VirtualBeanPropertyWriter withConfig(
        MapperConfig<?> config,
        AnnotatedClass declaring,
        BeanPropertyDefinition property,
        JavaType type) {
      return new Tasks(property, declaring.getAnnotations(), type);
    }
  }

  static final class Execution extends Fixed {
    Execution() {
      super(EXECUTION);
    }

    Execution(BeanPropertyDefinition property, Annotations annotations, JavaType type) {
      super(EXECUTION, property, annotations, type);
    }

    @Override
    public VirtualBeanPropertyWriter withConfig(
        MapperConfig<?> config,
        AnnotatedClass declaring,
        BeanPropertyDefinition property,
        JavaType type) {
      return new Execution(property, declaring.getAnnotations(), type);
    }
  }
}
