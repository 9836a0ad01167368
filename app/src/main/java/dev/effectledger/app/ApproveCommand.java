package dev.effectledger.app;

import dev.effectledger.policy.Durations;
import dev.effectledger.schema.BypassApprovals;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyPair;
import java.time.Clock;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code effectledger approve}: mints a signed bypass approval for one key; {@code approve keygen}
 * makes a signer's key pair. See {@link BypassApprovals}.
 */
@Command(
    name = "approve",
    mixinStandardHelpOptions = true,
    description = {
      "Sign an operator's approval to run one settled key once more (bypass). Prints the approval;"
          + " the agent's client or the gateway sends it with the intent, and a ledger that trusts"
          + " the signer (ledger.bypass.signer.<name>) runs the key again under a fresh effect key.",
    },
    subcommands = ApproveCommand.Keygen.class)
final class ApproveCommand implements Callable<Integer> {

  @Option(names = "--signer", description = "the signer's name, as the processors know it")
  String signer;

  @Option(names = "--key-file", description = "the signer's private key file (approve keygen)")
  Path keyFile;

  @Option(names = "--tenant", description = "the key's tenant")
  String tenant;

  @Option(names = "--key", description = "the idempotency key to run again")
  String key;

  @Option(names = "--operator", description = "who approves: audited with the bypass")
  String operator;

  @Option(names = "--reason", description = "why, e.g. a ticket number")
  String reason;

  @Option(
      names = "--expires",
      defaultValue = "1h",
      description = "how long the approval may be used (default ${DEFAULT-VALUE})")
  String expires;

  @Override
  public Integer call() throws Exception {
    // not picocli's required options: they would be demanded of `approve keygen` too
    Map<String, Object> given = new LinkedHashMap<>();
    given.put("--signer", signer);
    given.put("--key-file", keyFile);
    given.put("--tenant", tenant);
    given.put("--key", key);
    given.put("--operator", operator);
    given.put("--reason", reason);
    List<String> missing =
        given.entrySet().stream().filter(e -> e.getValue() == null).map(Map.Entry::getKey).toList();
    if (!missing.isEmpty()) {
      throw new IllegalArgumentException(
          "give " + String.join(", ", missing) + " (effectledger approve --help)");
    }
    if (operator.isBlank() || reason.isBlank()) {
      throw new IllegalArgumentException("--operator and --reason must say something");
    }
    Duration valid =
        Durations.parse(expires)
            .orElseThrow(
                () ->
                    new IllegalArgumentException(
                        "--expires '" + expires + "' is not a duration; use e.g. 15m or 1h"));
    String token =
        BypassApprovals.sign(
            new BypassApprovals.Approval(
                signer, tenant, key, operator, reason, Clock.systemUTC().instant().plus(valid)),
            BypassApprovals.privateKey(Files.readString(keyFile, StandardCharsets.US_ASCII)));
    System.out.println(token);
    return 0;
  }

  @Command(
      name = "keygen",
      mixinStandardHelpOptions = true,
      description =
          "Make a signer's Ed25519 key pair: writes the private key to --out (readable by its owner"
              + " only) and prints the line that makes processors trust it.")
  static final class Keygen implements Callable<Integer> {

    @Option(names = "--signer", required = true, description = "the signer's name, e.g. ops")
    String signer;

    @Option(names = "--out", required = true, description = "the private key file to write")
    Path out;

    @Override
    public Integer call() throws Exception {
      if (!signer.matches("[A-Za-z0-9_-]{1,64}")) {
        throw new IllegalArgumentException("--signer is 1 to 64 letters, digits, _ or -");
      }
      if (Files.exists(out)) {
        throw new IllegalArgumentException(
            out + " exists; choose another file, or remove it first");
      }
      KeyPair pair = BypassApprovals.generate();
      Files.writeString(
          out, BypassApprovals.encode(pair.getPrivate()) + "\n", StandardCharsets.US_ASCII);
      try {
        Files.setPosixFilePermissions(out, PosixFilePermissions.fromString("rw-------"));
      } catch (UnsupportedOperationException e) {
        System.err.println(
            "effectledger approve keygen: keep " + out + " readable by its owner only");
      }
      System.out.println(
          "# add to every processor's properties; keep " + out + " with the approvers only");
      System.out.println(
          AppConfig.BYPASS_SIGNER_PREFIX + signer + "=" + BypassApprovals.encode(pair.getPublic()));
      return 0;
    }
  }
}
