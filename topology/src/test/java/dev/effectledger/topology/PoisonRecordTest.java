package dev.effectledger.topology;

import static dev.effectledger.topology.LedgerDriver.T0;
import static dev.effectledger.topology.LedgerDriver.header;
import static dev.effectledger.topology.LedgerDriver.intent;
import static org.assertj.core.api.Assertions.assertThat;

import dev.effectledger.schema.AuditType;
import dev.effectledger.schema.ResultStatus;
import dev.effectledger.schema.ToolResult;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.ErrorHandlerContext;
import org.apache.kafka.streams.errors.ProcessingExceptionHandler;
import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.test.TestRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A record whose processing throws every time (a bug it triggers, simulated by an observer that
 * throws for one tool) fails the task until it has failed the configured number of times, so that a
 * passing cause can clear, then is dead-lettered with a REJECTED reply, and the ledger goes on.
 */
class PoisonRecordTest {

  @TempDir Path stateDir;
  private LedgerDriver ledger;

  @BeforeEach
  void start() {
    LedgerObserver buggy =
        new LedgerObserver() {
          @Override
          public void decided(String tool, AuditType type) {
            if (tool.equals("poison")) {
              throw new IllegalStateException("a bug in the observer");
            }
          }
        };
    ledger =
        new LedgerDriver(
            url -> LedgerConfig.of(LedgerStateMachineContract.POLICIES, url).withObserver(buggy),
            StreamsConfig.EXACTLY_ONCE_V2,
            stateDir,
            props -> {
              // The test driver does not read a failed record again (a real task does, from its
              // committed
              // offset), so here the first failure is the last; the counting is tested below.
              props.put(PoisonRecordHandler.ATTEMPTS_CONFIG, "1");
            });
  }

  @AfterEach
  void stop() {
    ledger.close();
  }

  @Test
  void shouldDeadLetterThePoisonRecordWithARejectedReplyAndGoOn() {
    // An unknown tool is refused with an audit event, which the buggy observer hears and throws on.
    ledger.send(intent("p1", "poison", "{}"), T0);
    ledger.send(intent("after", LedgerStateMachineContract.CHARGE, "{}"), T0);

    assertThat(ledger.dispatches("payments").readValuesToList())
        .extracting(d -> d.getIdempotencyKey())
        .containsExactly("after");
    List<TestRecord<byte[], byte[]>> dead = ledger.deadLetterRecords();
    assertThat(dead)
        .singleElement()
        .satisfies(
            letter -> {
              assertThat(header(letter.headers(), "effectledger.error.code"))
                  .isEqualTo("PROCESSING_FAILED");
              assertThat(header(letter.headers(), "effectledger.error.message"))
                  .contains("IllegalStateException")
                  .contains("a bug");
              assertThat(new String(letter.key())).isEqualTo("p1");
            });
    // What the last attempt forwarded before it threw (here the UNKNOWN_TOOL refusal) stays: Kafka
    // Streams cannot take back part of one record's processing without failing the task.
    List<ToolResult> replies =
        ledger.results.readValuesToList().stream()
            .filter(r -> r.getIdempotencyKey().equals("p1"))
            .toList();
    assertThat(replies)
        .last()
        .satisfies(
            r -> {
              assertThat(r.getStatus()).isEqualTo(ResultStatus.REJECTED);
              assertThat(r.getError().getCode()).isEqualTo("PROCESSING_FAILED");
              assertThat(r.getTool()).isEqualTo("poison");
            });
  }

  /** A record's coordinates, as Kafka Streams hands them to the handler. */
  private static ErrorHandlerContext at(String topic, long offset) {
    return new ErrorHandlerContext() {
      public String topic() {
        return topic;
      }

      public int partition() {
        return 0;
      }

      public long offset() {
        return offset;
      }

      public Headers headers() {
        return new RecordHeaders();
      }

      public String processorNodeId() {
        return "intent-processor";
      }

      public TaskId taskId() {
        return new TaskId(0, 0);
      }

      public long timestamp() {
        return 0;
      }

      public byte[] sourceRawKey() {
        return "k".getBytes();
      }

      public byte[] sourceRawValue() {
        return new byte[] {1};
      }
    };
  }

  @Test
  void shouldFailARecordUntilItHasFailedTheConfiguredTimesThenResumeWithItsDeadLetter() {
    PoisonRecordHandler handler = new PoisonRecordHandler();
    handler.configure(
        Map.of(StreamsConfig.APPLICATION_ID_CONFIG, "poison-count-" + System.nanoTime()));
    IllegalStateException bug = new IllegalStateException("bug");

    assertThat(handler.handleError(at("tool-outcomes", 7), null, bug).result())
        .isEqualTo(ProcessingExceptionHandler.Result.FAIL);
    assertThat(handler.handleError(at("tool-outcomes", 8), null, bug).result())
        .as("another record counts apart")
        .isEqualTo(ProcessingExceptionHandler.Result.FAIL);
    assertThat(handler.handleError(at("tool-outcomes", 7), null, bug).result())
        .isEqualTo(ProcessingExceptionHandler.Result.FAIL);
    ProcessingExceptionHandler.Response third =
        handler.handleError(at("tool-outcomes", 7), null, bug);

    assertThat(third.result()).isEqualTo(ProcessingExceptionHandler.Result.RESUME);
    assertThat(third.deadLetterQueueRecords())
        .singleElement()
        .satisfies(r -> assertThat(r.topic()).isEqualTo("tool-outcomes.dlq"));
  }

  @Test
  void shouldAlwaysFailAndNeverCountACauseThatPasses() {
    PoisonRecordHandler handler = new PoisonRecordHandler();
    handler.configure(
        Map.of(
            StreamsConfig.APPLICATION_ID_CONFIG,
            "poison-passing-" + System.nanoTime(),
            PoisonRecordHandler.ATTEMPTS_CONFIG,
            "1"));

    for (int i = 0; i < 5; i++) {
      assertThat(
              handler
                  .handleError(
                      at("tool-intents", 3),
                      null,
                      new StreamsException(new TimeoutException("broker away")))
                  .result())
          .isEqualTo(ProcessingExceptionHandler.Result.FAIL);
    }
  }
}
