package dev.effectledger.embedded;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.lang.reflect.Method;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code TCP_NODELAY} on the JDK's HTTP servers: read from the JDK's own setting ({@code
 * sun.net.httpserver.ServerConfig.noDelay()}, opened to the tests by this module's {@code
 * argLine}), not timed.
 */
class JdkHttpServersTest {

  private static final String OPEN = "--add-opens=jdk.httpserver/sun.net.httpserver=ALL-UNNAMED";

  /** Whether the JDK serves with TCP_NODELAY in this JVM, as the JDK itself decided it. */
  static boolean noDelay() throws ReflectiveOperationException {
    Method m = Class.forName("sun.net.httpserver.ServerConfig").getDeclaredMethod("noDelay");
    m.setAccessible(true);
    return (boolean) m.invoke(null);
  }

  /** Run in a fresh JVM by the tests below: creates servers in the order given, prints noDelay. */
  public static void main(String[] args) throws Exception {
    for (String first : args) {
      HttpServer server =
          first.equals("ours")
              ? JdkHttpServers.create(new InetSocketAddress("127.0.0.1", 0), 0)
              : HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      server.stop(0);
    }
    System.out.print(noDelay());
  }

  private static String inFreshJvm(String... order) throws IOException, InterruptedException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> command =
        new java.util.ArrayList<>(
            List.of(
                java,
                OPEN,
                "-cp",
                System.getProperty("java.class.path"),
                JdkHttpServersTest.class.getName()));
    command.addAll(List.of(order));
    // stderr apart: a JVM may say "Picked up JAVA_TOOL_OPTIONS" there
    Process p = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).as("the probe JVM ended within 30 s").isTrue();
    return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
  }

  @Test
  void everyTestJvmServesWithNoDelayWhateverTestCreatesTheFirstServer() throws Exception {
    // What a bare test server does: the JDK's plain factory, no property set by us first.
    HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0).stop(0);

    assertThat(noDelay())
        .as(
            "the build starts every test JVM with -Dsun.net.httpserver.nodelay=true"
                + " (surefire's and failsafe's systemPropertyVariables in the parent pom)")
        .isTrue();
  }

  @Test
  void ourServerCreatedFirstGetsTheOptionAndAPlainServerCreatedFirstKeepsItOff() throws Exception {
    assertThat(inFreshJvm("ours", "plain")).isEqualTo("true");
    // The JDK reads the property once per JVM: our factory cannot mend a JVM that made a plain
    // server before it. This is why every test JVM gets the property at launch.
    assertThat(inFreshJvm("plain", "ours")).isEqualTo("false");
  }
}
