package dev.effectledger.connectors.reconcile;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.effectledger.schema.Topics;
import dev.effectledger.testkit.FakeClock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/** What the reconciler tells the console about held keys, over a MockProducer: no broker. */
class ReconcileFindingsTest {

  private static final Instant T0 = Instant.parse("2025-01-01T00:00:00Z");

  private final FakeClock clock = new FakeClock(T0);
  private final MockProducer<String, String> producer =
      new MockProducer<>(true, null, new StringSerializer(), new StringSerializer());
  private final ReconcileFindings findings = new ReconcileFindings(producer, clock);

  @Test
  void publishesAFindingSplitIntoStatusAndDetail() throws Exception {
    findings.found("t|k1", "NOT_YET: held for less than the minimum age");
    assertThat(producer.history()).isEmpty(); // only at the end of the pass

    findings.publishFindings();

    assertThat(producer.history()).hasSize(1);
    ProducerRecord<String, String> sent = producer.history().get(0);
    assertThat(sent.topic()).isEqualTo(Topics.FINDINGS);
    assertThat(sent.key()).isEqualTo("t|k1");
    JsonNode json = new ObjectMapper().readTree(sent.value());
    assertThat(json.get("status").asText()).isEqualTo("NOT_YET");
    assertThat(json.get("detail").asText()).isEqualTo("held for less than the minimum age");
    assertThat(json.get("since").asText()).isEqualTo(T0.toString());
    assertThat(json.get("by").asText()).isEqualTo("reconciler");
  }

  @Test
  void aFindingIsPublishedAgainOnlyWhenItsStatusChanges() throws Exception {
    findings.found("t|k1", "NOT_YET: first words");
    findings.publishFindings();
    clock.advance(Duration.ofMinutes(1));

    findings.found("t|k1", "NOT_YET: other words, same status");
    findings.publishFindings();
    assertThat(producer.history()).hasSize(1);

    findings.found("t|k1", "UNAVAILABLE: the downstream could not tell; still held");
    findings.publishFindings();
    assertThat(producer.history()).hasSize(2);
    JsonNode json = new ObjectMapper().readTree(producer.history().get(1).value());
    assertThat(json.get("status").asText()).isEqualTo("UNAVAILABLE");
    assertThat(json.get("since").asText()).isEqualTo(T0.plus(Duration.ofMinutes(1)).toString());
  }

  @Test
  void aKeyNoLongerHeldHasItsPublishedFindingTombstonedOnce() {
    findings.found("t|k1", "STARTED: under way");
    findings.publishFindings();

    findings.noLongerHeld("t|k1");
    findings.noLongerHeld("t|never-published");
    findings.publishFindings();

    assertThat(producer.history()).hasSize(2);
    assertThat(producer.history().get(1).key()).isEqualTo("t|k1");
    assertThat(producer.history().get(1).value()).isNull();

    findings.noLongerHeld("t|k1"); // already gone: nothing more
    findings.publishFindings();
    assertThat(producer.history()).hasSize(2);

    findings.found("t|k1", "STARTED: held again in a next life");
    findings.publishFindings();
    assertThat(producer.history()).hasSize(3);
  }

  @Test
  void afterOneFailedPublishFindingsAreNoLongerSent() {
    FailingOnce failing = new FailingOnce();
    ReconcileFindings withoutTopic = new ReconcileFindings(failing, clock);

    withoutTopic.found("t|k1", "NOT_YET: first");
    withoutTopic.publishFindings(); // fails: told once, turned off
    withoutTopic.found("t|k2", "NOT_YET: second");
    withoutTopic.publishFindings();

    assertThat(failing.attempts).isEqualTo(1);
    assertThat(failing.history()).isEmpty();
  }

  /** A producer whose first send throws, as one does for a topic it cannot write to. */
  private static final class FailingOnce extends MockProducer<String, String> {
    int attempts;

    FailingOnce() {
      super(true, null, new StringSerializer(), new StringSerializer());
    }

    @Override
    public synchronized Future<RecordMetadata> send(
        ProducerRecord<String, String> record, Callback callback) {
      if (attempts++ == 0) {
        throw new IllegalStateException("no such topic");
      }
      return super.send(record, callback);
    }
  }
}
