package dev.effectledger.springai;

import dev.effectledger.client.ToolCallClient;
import dev.effectledger.client.ToolCalls;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import org.slf4j.LoggerFactory;
import org.springframework.ai.model.tool.ToolCallingManager;
import org.springframework.ai.tool.resolution.ToolCallbackResolver;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.core.env.Environment;

/**
 * Spring Boot auto-configuration: the application's {@link ToolCallingManager} (Spring AI's, which
 * runs the tool calls of every ChatClient Boot builds) and its {@link ToolCallbackResolver} (tools
 * found by name) are wrapped so that each tool is routed by the ledger's applied policy: {@code
 * read} tools run as they are, every other class goes through Effect Ledger with the step from the
 * chat call's tool context ({@link LedgerToolContext}). A ChatClient made with {@code
 * ChatClient.create(model)} or {@code ChatClient.builder(model)} makes a manager of its own that
 * this does not see: give it a {@link LedgerToolCallingManager} ({@code
 * ToolCallingAdvisor.builder().toolCallingManager(...)}), or build it from Boot's {@code
 * ChatClient.Builder}.
 *
 * <p>The client is the application's {@link ToolCalls} bean, or a {@link ToolCallClient} made from
 * {@code effectledger.bootstrap-servers} and {@code effectledger.schema-registry-url} (plus {@code
 * effectledger.timeout}, default 30s). {@code effectledger.tools.ledgered} and {@code
 * effectledger.tools.direct} (comma-separated tool names) route tools while no applied policy names
 * them, and tools that are not the ledger's; an application's {@link ToolRouting} bean (for
 * business scopes per tool) takes their place. Without a client the application does not start
 * (rather than run its write tools without the ledger); {@code effectledger.enabled=false} turns
 * the auto-configuration off.
 */
@AutoConfiguration(
    afterName = "org.springframework.ai.model.tool.autoconfigure.ToolCallingAutoConfiguration")
@ConditionalOnClass(ToolCallingManager.class)
@ConditionalOnProperty(name = "effectledger.enabled", matchIfMissing = true)
public class EffectLedgerAutoConfiguration {

  @Bean(destroyMethod = "close")
  @ConditionalOnMissingBean(ToolCalls.class)
  @ConditionalOnProperty("effectledger.bootstrap-servers")
  ToolCallClient effectLedgerClient(Environment env) throws InterruptedException {
    ToolCallClient client =
        ToolCallClient.builder()
            .bootstrapServers(env.getRequiredProperty("effectledger.bootstrap-servers"))
            .schemaRegistryUrl(env.getRequiredProperty("effectledger.schema-registry-url"))
            .timeout(
                env.getProperty("effectledger.timeout", Duration.class, Duration.ofSeconds(30)))
            .build();
    // The tools' classes come from the applied policy: read it before the first chat call.
    if (!client.awaitKeyRules(Duration.ofSeconds(30))) {
      LoggerFactory.getLogger(EffectLedgerAutoConfiguration.class)
          .warn(
              "Effect Ledger's applied tool policy was not read within 30 s; until it is, only"
                  + " tools named in effectledger.tools.ledgered or .direct run");
    }
    return client;
  }

  /**
   * Static, as a bean post-processor must be (it is made before the beans it processes); the client
   * is looked up when a manager is wrapped, not before.
   */
  @Bean
  static BeanPostProcessor effectLedgerToolCallingManager(
      ObjectProvider<ToolCalls> client, ObjectProvider<ToolRouting> routings, Environment env) {
    return new BeanPostProcessor() {
      @Override
      public Object postProcessAfterInitialization(Object bean, String name) {
        if (bean instanceof ToolCallbackResolver resolver
            && !(bean instanceof LedgerToolCallbackResolver)) {
          // Consulted by name when tool resolution falls back to the application's tool beans
          // (spring.ai.tools.resolution.fallback.enabled): those tools are routed too.
          return new LedgerToolCallbackResolver(
              resolver, () -> calls(client), () -> routing(routings, env));
        }
        if (bean instanceof ToolCallingManager manager
            && !(bean instanceof LedgerToolCallingManager)) {
          return new LedgerToolCallingManager(manager, calls(client), routing(routings, env));
        }
        return bean;
      }
    };
  }

  private static ToolRouting routing(ObjectProvider<ToolRouting> routings, Environment env) {
    return routings.getIfAvailable(
        () ->
            ToolRouting.byPolicy()
                .ledgered(names(env, "effectledger.tools.ledgered"))
                .direct(names(env, "effectledger.tools.direct")));
  }

  private static ToolCalls calls(ObjectProvider<ToolCalls> client) {
    ToolCalls calls = client.getIfAvailable();
    if (calls == null) {
      throw new IllegalStateException(
          "Effect Ledger's auto-configuration needs the ledger's client: define a ToolCalls"
              + " bean or set effectledger.bootstrap-servers and"
              + " effectledger.schema-registry-url (set effectledger.enabled=false to run the"
              + " tools without the ledger)");
    }
    return calls;
  }

  private static HashSet<String> names(Environment env, String property) {
    return new HashSet<>(List.of(env.getProperty(property, String[].class, new String[0])));
  }
}
