package dev.effectledger.app;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The module boundaries docs/architecture.md states, checked on the main classes of every module on
 * this module's class path (all but bench): dependencies point one way, and what a module keeps in
 * an {@code internal} package is its own.
 */
class ArchitectureTest {

  private static JavaClasses classes;

  @BeforeAll
  static void importClasses() {
    classes =
        new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            // another module's test jar (mcp's McpPipeline, for McpCommandsIT) is test code too
            .withImportOption(location -> !location.contains("-tests.jar"))
            .importPackages("dev.effectledger");
  }

  /** Every module's root package, and the one whose internals it may use (its own). */
  private static final List<String> MODULES =
      List.of(
          "dev.effectledger.schema",
          "dev.effectledger.policy",
          "dev.effectledger.auth",
          "dev.effectledger.embedded",
          "dev.effectledger.topology",
          "dev.effectledger.connectors",
          "dev.effectledger.client",
          "dev.effectledger.langchain4j",
          "dev.effectledger.springai",
          "dev.effectledger.gateway",
          "dev.effectledger.mcp",
          "dev.effectledger.app");

  @Test
  void shouldKeepEveryModulesInternalsToItself() {
    for (String module : MODULES) {
      noClasses()
          .that()
          .resideOutsideOfPackage(module + "..")
          .should()
          .dependOnClassesThat()
          .resideInAPackage(module + "..internal..")
          .because("a module's internal packages are its own (docs/architecture.md)")
          .allowEmptyShould(true)
          .check(classes);
    }
  }

  @Test
  void shouldPointDependenciesOneWay() {
    layeredArchitecture()
        .consideringOnlyDependenciesInLayers()
        .layer("schemas")
        .definedBy("dev.effectledger.schema..")
        .layer("policy")
        .definedBy("dev.effectledger.policy..")
        .layer("auth")
        .definedBy("dev.effectledger.auth..")
        .layer("embedded")
        .definedBy("dev.effectledger.embedded..")
        .layer("topology")
        .definedBy("dev.effectledger.topology..")
        .layer("connectors")
        .definedBy("dev.effectledger.connectors..")
        .layer("client")
        .definedBy("dev.effectledger.client..")
        .layer("adapters")
        .definedBy("dev.effectledger.langchain4j..", "dev.effectledger.springai..")
        .layer("gateway")
        .definedBy("dev.effectledger.gateway..")
        .layer("mcp")
        .definedBy("dev.effectledger.mcp..")
        .layer("app")
        .definedBy("dev.effectledger.app..")
        .whereLayer("app")
        .mayNotBeAccessedByAnyLayer()
        .whereLayer("adapters")
        .mayNotBeAccessedByAnyLayer()
        .whereLayer("mcp")
        .mayOnlyBeAccessedByLayers("app")
        .whereLayer("gateway")
        .mayOnlyBeAccessedByLayers("app")
        .whereLayer("topology")
        .mayOnlyBeAccessedByLayers("app")
        .whereLayer("connectors")
        .mayOnlyBeAccessedByLayers("mcp", "app")
        .whereLayer("client")
        .mayOnlyBeAccessedByLayers("adapters", "gateway", "mcp", "app")
        .whereLayer("embedded")
        .mayOnlyBeAccessedByLayers("app")
        .whereLayer("auth")
        .mayOnlyBeAccessedByLayers("gateway", "mcp", "app")
        .whereLayer("policy")
        .mayOnlyBeAccessedByLayers("auth", "topology", "connectors", "gateway", "mcp", "app")
        .check(classes);
  }
}
