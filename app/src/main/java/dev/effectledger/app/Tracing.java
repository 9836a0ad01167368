package dev.effectledger.app;

import io.opentelemetry.api.GlobalOpenTelemetry;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdkBuilder;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Traces for a process of the command, off by default: on when {@code OTEL_TRACES_EXPORTER}, {@code
 * OTEL_EXPORTER_OTLP_ENDPOINT} or {@code OTEL_EXPORTER_OTLP_TRACES_ENDPOINT} is set and {@code
 * OTEL_SDK_DISABLED} is not {@code true}. The SDK is then configured as OpenTelemetry's
 * autoconfiguration reads every other {@code OTEL_*} variable (the sampler, e.g. {@code
 * OTEL_TRACES_SAMPLER=parentbased_traceidratio} with {@code OTEL_TRACES_SAMPLER_ARG=0.01}; the
 * exporter, OTLP over HTTP with protobuf, the only OTLP protocol shipped; the service name, by
 * default {@code effectledger-<command>}) and set as the process's global OpenTelemetry, where
 * every part's spans go ({@code dev.effectledger.schema.Traces}). Metrics and logs are not exported
 * this way (Prometheus and the process's log stay what they are) unless {@code
 * OTEL_METRICS_EXPORTER} or {@code OTEL_LOGS_EXPORTER} says otherwise. The SDK flushes its spans at
 * exit.
 */
public final class Tracing {

  private Tracing() {}

  /** Whether {@code env} asks for traces. */
  public static boolean wanted(Map<String, String> env) {
    if ("true".equalsIgnoreCase(env.getOrDefault("OTEL_SDK_DISABLED", "").trim())) {
      return false;
    }
    return set(env, "OTEL_TRACES_EXPORTER")
        || set(env, "OTEL_EXPORTER_OTLP_ENDPOINT")
        || set(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
  }

  private static boolean set(Map<String, String> env, String name) {
    String value = env.get(name);
    return value != null && !value.isBlank() && !value.trim().equalsIgnoreCase("none");
  }

  /**
   * Starts the SDK for {@code command} when {@code env} asks for traces; null when it does not (the
   * global OpenTelemetry is then the no-op, set now).
   */
  public static OpenTelemetrySdk start(Map<String, String> env, String command) {
    return start(env, command, builder -> {});
  }

  /**
   * As {@link #start(Map, String)}, {@code customize} changing the autoconfiguration before it is
   * built (tests add an in-memory exporter beside the configured one; the tracing bench, which
   * closes each SDK itself, drops the shutdown hook).
   */
  public static OpenTelemetrySdk start(
      Map<String, String> env,
      String command,
      Consumer<AutoConfiguredOpenTelemetrySdkBuilder> customize) {
    if (!wanted(env)) {
      try {
        // the no-op, said once: else OpenTelemetry's first use logs that its autoconfiguration is
        // on the class path but off
        GlobalOpenTelemetry.set(OpenTelemetry.noop());
      } catch (IllegalStateException alreadySet) {
        // a test, or an embedding application, set its own
      }
      return null;
    }
    Map<String, String> properties = new HashMap<>();
    properties.put("otel.service.name", "effectledger-" + command);
    properties.put("otel.metrics.exporter", "none");
    properties.put("otel.logs.exporter", "none");
    // OTLP over HTTP (port 4318), the protocol the specification defaults to: the command ships
    // the JDK's HTTP sender, not a gRPC one
    properties.put("otel.exporter.otlp.protocol", "http/protobuf");
    // the variables as the autoconfiguration's properties (OTEL_TRACES_SAMPLER:
    // otel.traces.sampler)
    env.forEach(
        (name, value) -> {
          if (name.startsWith("OTEL_")) {
            properties.put(name.toLowerCase(Locale.ROOT).replace('_', '.'), value);
          }
        });
    AutoConfiguredOpenTelemetrySdkBuilder builder =
        AutoConfiguredOpenTelemetrySdk.builder()
            .addPropertiesSupplier(() -> properties)
            .setResultAsGlobal();
    customize.accept(builder);
    return builder.build().getOpenTelemetrySdk();
  }
}
