package dev.effectledger.connectors.reconcile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.connectors.Capabilities;
import dev.effectledger.connectors.Connector;
import dev.effectledger.connectors.EffectOutcome;
import dev.effectledger.connectors.EffectRequest;
import dev.effectledger.connectors.Lookup;
import dev.effectledger.schema.AuditEvent;
import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.Outcome;
import dev.effectledger.schema.OutcomeStatus;
import dev.effectledger.schema.Topics;
import dev.effectledger.testkit.FakeClock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.Serializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/** How a held key's lookup becomes its resolving outcome: no broker, a connector stub. */
class ResolutionsTest {

  private static final Instant NOW = Instant.parse("2025-01-01T00:10:00Z");
  private static final Serializer<Outcome> NO_BYTES = (topic, outcome) -> new byte[0];

  private final FakeClock clock = new FakeClock(NOW);
  private final MockProducer<String, String> findingsProducer =
      new MockProducer<>(true, null, new StringSerializer(), new StringSerializer());
  private final ReconcileFindings findings = new ReconcileFindings(findingsProducer, clock);
  private final MockProducer<String, Outcome> producer =
      new MockProducer<>(true, null, new StringSerializer(), NO_BYTES);
  private final Resolutions resolutions = new Resolutions(producer, findings, clock);
  private final List<ProducerRecord<String, Outcome>> out = new ArrayList<>();

  private static AuditEvent held(String effectKey) {
    return AuditEvent.newBuilder()
        .setIdempotencyKey("ik-1")
        .setTenant("acme")
        .setTool("payments")
        .setType(AuditType.HELD_UNKNOWN)
        .setAttempt(3)
        .setAt(Instant.parse("2025-01-01T00:00:00Z"))
        .setEffectKey(effectKey)
        .setIncarnation(7L)
        .build();
  }

  /** Answers every lookup with {@code answer} and remembers the keys it was asked about. */
  private static final class Stub implements Connector {
    final Lookup answer;
    final List<String> asked = new ArrayList<>();

    Stub(Lookup answer) {
      this.answer = answer;
    }

    @Override
    public Capabilities capabilities() {
      return new Capabilities(false, false, true);
    }

    @Override
    public EffectOutcome execute(EffectRequest request) {
      throw new AssertionError("a reconciler never executes");
    }

    @Override
    public Lookup lookup(String effectKey) {
      asked.add(effectKey);
      return answer;
    }
  }

  private String publishedStatus() throws Exception {
    findings.publishFindings();
    return new ObjectMapper()
        .readTree(findingsProducer.history().get(0).value())
        .get("status")
        .asText();
  }

  @Test
  void aFoundEffectSettlesTheKeyAsSucceeded() throws Exception {
    Stub connector = new Stub(Lookup.found("pay-9", null));

    ToolReport report = resolutions.resolve(connector, held("ek-1"), out, "acme|ik-1");

    assertThat(connector.asked).containsExactly("ek-1");
    assertThat(report).isEqualTo(new ToolReport(0, 0, 1, 0, 0));
    assertThat(out).hasSize(1);
    assertThat(out.get(0).topic()).isEqualTo(Topics.OUTCOMES);
    assertThat(out.get(0).key()).isEqualTo("ik-1");
    Outcome outcome = out.get(0).value();
    assertThat(outcome.getStatus()).isEqualTo(OutcomeStatus.SUCCEEDED);
    assertThat(outcome.getResultJson()).isEqualTo("null"); // no result: JSON null
    assertThat(outcome.getEffectId()).isEqualTo("pay-9");
    assertThat(outcome.getEffectKey()).isEqualTo("ek-1");
    assertThat(outcome.getAttempt()).isEqualTo(3);
    assertThat(outcome.getIncarnation()).isEqualTo(7L);
    assertThat(outcome.getTenant()).isEqualTo("acme");
    assertThat(outcome.getCompletedAt()).isEqualTo(NOW);
    assertThat(publishedStatus()).isEqualTo("FOUND");
  }

  @Test
  void noEffectReleasesTheKeyForARetryUnderItsIdempotencyKeyWhenItHasNoEffectKey()
      throws Exception {
    Stub connector = new Stub(Lookup.notFound());

    ToolReport report = resolutions.resolve(connector, held(null), out, "acme|ik-1");

    assertThat(connector.asked).containsExactly("ik-1");
    assertThat(report).isEqualTo(new ToolReport(0, 0, 0, 1, 0));
    Outcome outcome = out.get(0).value();
    assertThat(outcome.getStatus()).isEqualTo(OutcomeStatus.RETRYABLE);
    assertThat(outcome.getEffectKey()).isEqualTo("ik-1");
    assertThat(outcome.getError().getCode()).isEqualTo("RECONCILED_NO_EFFECT");
    assertThat(outcome.getError().getRetriable()).isTrue();
    assertThat(publishedStatus()).isEqualTo("NOT_FOUND");
  }

  @Test
  void aDownstreamThatCannotTellLeavesTheKeyHeldWithNoOutcome() throws Exception {
    ToolReport report =
        resolutions.resolve(new Stub(Lookup.unavailable()), held("ek-1"), out, "acme|ik-1");

    assertThat(report).isEqualTo(new ToolReport(0, 0, 0, 0, 1));
    assertThat(out).isEmpty();
    assertThat(publishedStatus()).isEqualTo("UNAVAILABLE");
  }

  @Test
  void publishSendsEveryOutcome() {
    resolutions.resolve(new Stub(Lookup.notFound()), held("ek-1"), out, "acme|ik-1");
    resolutions.resolve(new Stub(Lookup.found("x", "{}")), held("ek-2"), out, "acme|ik-2");

    resolutions.publish(out);

    assertThat(producer.history())
        .extracting(r -> r.value().getEffectKey())
        .containsExactly("ek-1", "ek-2");
  }

  @Test
  void aFailedPublishAsksForAnotherRun() {
    MockProducer<String, Outcome> failing =
        new MockProducer<>(true, null, new StringSerializer(), NO_BYTES) {
          @Override
          public synchronized Future<RecordMetadata> send(
              ProducerRecord<String, Outcome> record, Callback callback) {
            return CompletableFuture.failedFuture(new KafkaException("broker gone"));
          }
        };
    Resolutions failingResolutions = new Resolutions(failing, findings, clock);
    resolutions.resolve(new Stub(Lookup.notFound()), held("ek-1"), out, "acme|ik-1");

    assertThatThrownBy(() -> failingResolutions.publish(out))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("run the reconciler again")
        .hasRootCauseMessage("broker gone");
  }
}
