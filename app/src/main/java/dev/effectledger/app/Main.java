package dev.effectledger.app;

import dev.effectledger.app.demo.DemoCommand;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code effectledger} command. */
@Command(
    name = "effectledger",
    mixinStandardHelpOptions = true,
    version = "effectledger 0.1.0",
    description = "Exactly-once effect for AI-agent tool calls, on Kafka.",
    subcommands = {
      DemoCommand.class,
      ProcessorCommand.class,
      ExecutorCommand.class,
      GatewayCommand.class,
      McpCommand.class,
      BrokerCommand.class,
      DownstreamCommand.class,
      ToolsCommand.class,
      ReconcileCommand.class,
      ApproveCommand.class,
      StatusCommand.class,
      CommandLine.HelpCommand.class
    })
public final class Main implements Runnable {

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    Tracing.start(System.getenv(), args.length == 0 ? "command" : args[0]);
    System.exit(run(args));
  }

  /** Runs the command line and returns its exit code; tests call this. */
  public static int run(String... args) {
    return new CommandLine(new Main())
        .setExecutionExceptionHandler(
            (e, commandLine, parseResult) -> {
              commandLine.getErr().println("effectledger: " + e.getMessage());
              return 2;
            })
        .execute(args);
  }

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }
}
