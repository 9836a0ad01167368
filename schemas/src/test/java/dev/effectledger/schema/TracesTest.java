package dev.effectledger.schema;

import static org.assertj.core.api.Assertions.assertThat;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Context;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.jupiter.api.Test;

class TracesTest {

  private static final String TRACE = "0af7651916cd43dd8448eb211c80319c";

  private static Span span(String spanId, boolean sampled) {
    return Span.wrap(
        SpanContext.create(
            TRACE,
            spanId,
            sampled ? TraceFlags.getSampled() : TraceFlags.getDefault(),
            TraceState.getDefault()));
  }

  @Test
  void shouldCarryTraceContextOnARecordsHeadersReplacingWhatTheyHad() {
    RecordHeaders headers = new RecordHeaders();
    headers.add(
        Traces.TRACEPARENT,
        "00-ffffffffffffffffffffffffffffffff-ffffffffffffffff-01".getBytes(StandardCharsets.UTF_8));
    Traces.inject(Context.root().with(span("b7ad6b7169203331", true)), headers);

    assertThat(headers.headers(Traces.TRACEPARENT)).hasSize(1);
    assertThat(new String(headers.lastHeader(Traces.TRACEPARENT).value(), StandardCharsets.UTF_8))
        .isEqualTo("00-" + TRACE + "-b7ad6b7169203331-01");
    SpanContext read = Span.fromContext(Traces.extract(headers)).getSpanContext();
    assertThat(read.getTraceId()).isEqualTo(TRACE);
    assertThat(read.getSpanId()).isEqualTo("b7ad6b7169203331");
    assertThat(read.isRemote()).isTrue();
  }

  @Test
  void shouldReadNoParentFromNoneOrAMalformedTraceparent() {
    assertThat(Traces.inTrace(Traces.extract(new RecordHeaders()))).isFalse();
    assertThat(Traces.inTrace(Traces.extract("not-a-traceparent", null))).isFalse();
    assertThat(Traces.inTrace(Traces.extract(null, null))).isFalse();
    assertThat(Traces.traceparent(Context.root())).isNull();
    RecordHeaders untouched = new RecordHeaders();
    Traces.inject(Context.root(), untouched);
    assertThat(untouched.toArray()).as("nothing written without a span").isEmpty();
  }

  @Test
  void shouldWriteTheTraceparentAsThePropagatorDoesWithItsSampledFlag() {
    assertThat(Traces.traceparent(Context.root().with(span("00f067aa0ba902b7", false))))
        .isEqualTo("00-" + TRACE + "-00f067aa0ba902b7-00");
    assertThat(Traces.spanContext("00-" + TRACE + "-00f067aa0ba902b7-01").isSampled()).isTrue();
  }

  @Test
  void shouldCarryASpanUnderACallersContextAlwaysAndAStartedTraceOnlyWhenSampled() {
    Context caller = Traces.extract("00-" + TRACE + "-00f067aa0ba902b7-00", null);
    assertThat(Traces.carried(span("b7ad6b7169203331", false), caller))
        .as("the caller's unsampled trace goes on")
        .isTrue();
    assertThat(Traces.carried(span("b7ad6b7169203331", false), Context.root()))
        .as("an unsampled trace of our own: as with tracing off")
        .isFalse();
    assertThat(Traces.carried(span("b7ad6b7169203331", true), Context.root())).isTrue();
    assertThat(Traces.carried(Span.getInvalid(), Context.root())).isFalse();
  }
}
