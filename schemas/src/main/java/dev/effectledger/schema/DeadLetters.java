package dev.effectledger.schema;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import org.apache.kafka.common.header.Headers;
import org.apache.kafka.common.header.internals.RecordHeaders;

/**
 * The one shape of a dead-letter record, written by the ledger ({@code tool-intents.dlq}) and the
 * executors ({@code tool-dispatch.dlq}): the record as it came, with headers naming why ({@value
 * #CODE}, {@value #MESSAGE}) and where it came from ({@value #SOURCE_TOPIC}, {@value
 * #SOURCE_PARTITION}, {@value #SOURCE_OFFSET}).
 *
 * <p>A dead letter must never be larger than what a producer can send: a topic may accept records
 * above the producer's {@code max.request.size} (1 MiB by default), and a dead letter refused by
 * the producer fails the task, which reads the same record again, for ever. So a value above {@link
 * #MAX_VALUE_BYTES} keeps only its first {@code MAX_VALUE_BYTES}, with headers giving its full size
 * ({@value #VALUE_BYTES}) and SHA-256 ({@value #VALUE_SHA256}) and marking it cut ({@value
 * #VALUE_TRUNCATED}); the source coordinates find the whole record while the topic retains it.
 */
public final class DeadLetters {

  public static final String CODE = "effectledger.error.code";
  public static final String MESSAGE = "effectledger.error.message";
  public static final String SOURCE_TOPIC = "effectledger.source.topic";
  public static final String SOURCE_PARTITION = "effectledger.source.partition";
  public static final String SOURCE_OFFSET = "effectledger.source.offset";
  public static final String VALUE_BYTES = "effectledger.value.bytes";
  public static final String VALUE_SHA256 = "effectledger.value.sha256";
  public static final String VALUE_TRUNCATED = "effectledger.value.truncated";

  /** The most of a value a dead letter carries: 256 KiB, well under a producer's default 1 MiB. */
  public static final int MAX_VALUE_BYTES = 256 * 1024;

  /** The most of a message header a dead letter carries. */
  private static final int MAX_MESSAGE_CHARS = 1024;

  private DeadLetters() {}

  /**
   * Headers naming the reason and the source record; {@code partition} and {@code offset} are left
   * out when negative.
   */
  public static Headers headers(
      String code, String message, String topic, int partition, long offset) {
    String text = String.valueOf(message);
    Headers headers =
        new RecordHeaders()
            .add(CODE, utf8(code))
            .add(
                MESSAGE,
                utf8(
                    text.length() > MAX_MESSAGE_CHARS
                        ? text.substring(0, MAX_MESSAGE_CHARS) + "..."
                        : text));
    if (topic != null) {
      headers.add(SOURCE_TOPIC, utf8(topic));
    }
    if (partition >= 0) {
      headers.add(SOURCE_PARTITION, utf8(Integer.toString(partition)));
    }
    if (offset >= 0) {
      headers.add(SOURCE_OFFSET, utf8(Long.toString(offset)));
    }
    return headers;
  }

  /**
   * {@code value} as a dead letter carries it: whole up to {@link #MAX_VALUE_BYTES}, else cut, with
   * {@code headers} saying so.
   */
  public static byte[] bounded(byte[] value, Headers headers) {
    if (value == null || value.length <= MAX_VALUE_BYTES) {
      return value;
    }
    headers.add(VALUE_BYTES, utf8(Integer.toString(value.length)));
    headers.add(VALUE_SHA256, utf8(sha256(value)));
    headers.add(VALUE_TRUNCATED, utf8("true"));
    return Arrays.copyOf(value, MAX_VALUE_BYTES);
  }

  /** Hex SHA-256 of {@code bytes}. */
  public static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is required of every JVM", e);
    }
  }

  private static byte[] utf8(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }
}
