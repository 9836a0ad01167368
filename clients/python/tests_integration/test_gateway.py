"""The Python client against a real gateway, ledger, executor and counting payment API, started by
the Java integration test ClientsIT (app module), which passes where they listen:

    EFFECTLEDGER_GATEWAY_URL, EFFECTLEDGER_TOKEN  the gateway and a token of tenant acme
    EFFECTLEDGER_REPORT                           a file: one JSON line per action {"name", "key"},
                                                  whose effects the Java test counts afterwards
    EFFECTLEDGER_JAVA_KEY, EFFECTLEDGER_JAVA_STEP the key the Java client got for a step it called
                                                  first, and that step ("run/step/scope")

Not meant to run on its own: without those variables every test fails, it does not skip.
"""

import json
import os
import unittest

import effectledger
from effectledger import (
    EffectLedgerError,
    Failed,
    GatewayClient,
    GatewayError,
    KeyDerivationError,
    KeyRules,
    Rejected,
    StepContext,
    StillRunning,
    Succeeded,
    ToolFailed,
    Unavailable,
    derive,
    exactly_once,
)

URL = os.environ.get("EFFECTLEDGER_GATEWAY_URL", "")
TOKEN = os.environ.get("EFFECTLEDGER_TOKEN", "")
REPORT = os.environ.get("EFFECTLEDGER_REPORT", "")
CHARGE_RULES = KeyRules(ignore=["/reason"], require=["/amount", "/to"])


def report(name, key, bypassed=False):
    """Records an action for ClientsIT to count: one effect under ``key``, and, when ``bypassed``,
    one more under the fresh effect key of the one operator approval it was run again with."""
    with open(REPORT, "a", encoding="utf-8") as f:
        f.write(json.dumps({"name": name, "key": key, "bypassed": bypassed}) + "\n")


class GatewayClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not (URL and TOKEN and REPORT):
            raise RuntimeError("run by ClientsIT, which sets EFFECTLEDGER_GATEWAY_URL and the rest")

    def client(self, **options):
        return GatewayClient(URL, TOKEN, **options)

    def test_the_four_retry_layers_take_effect_once(self):
        step = StepContext("acme", "run-py-layers", "pay-invoice", "customer:42")
        arguments = {"amount": 1000, "to": "cus_42", "reason": "monthly invoice"}

        first = self.client().call(step, "charge_card", arguments)
        # the HTTP client's own retry: the same request again
        http_retry = self.client().call(step, "charge_card", arguments)
        # the tool wrapper's retry, on a new connection and client
        wrapper_retry = self.client(retries=0).call(step, "charge_card", json.dumps(arguments))
        # the model re-emits the call: other member order, another free-text reason (ignored)
        remitted = self.client().call(
            step, "charge_card", {"reason": "the model rephrased it", "to": "cus_42", "amount": 1000}
        )
        # the orchestrator replays the step after a crash: a new client, through the decorator
        @exactly_once(self.client(), scope="customer:42")
        def charge_card(amount, to, reason=""):
            raise AssertionError("the body of a wrapped tool is never run by the agent")

        with effectledger.step("acme", "run-py-layers", "pay-invoice"):
            replayed_result = charge_card(1000, to="cus_42", reason="after the crash")

        self.assertIsInstance(first, Succeeded)
        self.assertFalse(first.replayed)
        for again in (http_retry, wrapper_retry, remitted):
            self.assertIsInstance(again, Succeeded)
            self.assertTrue(again.replayed, again)
            self.assertEqual(first.key, again.key)
            self.assertEqual(first.effect_id, again.effect_id)
        self.assertEqual(first.result, replayed_result)
        report("python: four retry layers", first.key)

    def test_the_same_step_gets_the_key_the_java_client_derived_and_its_result(self):
        java_key = os.environ["EFFECTLEDGER_JAVA_KEY"]
        run, step_id, scope = os.environ["EFFECTLEDGER_JAVA_STEP"].split("/")
        step = StepContext("acme", run, step_id, scope)
        arguments = {"amount": 700, "to": "cus_7"}

        local = derive(step, "charge_card", arguments, CHARGE_RULES)
        answer = self.client().call(step, "charge_card", arguments)

        self.assertEqual(java_key, local.key)
        self.assertIsInstance(answer, Succeeded)
        self.assertEqual(java_key, answer.key)
        self.assertTrue(answer.replayed)
        report("python: after java", answer.key)

    def test_a_call_still_running_at_the_end_of_its_wait_is_attached_to_by_key(self):
        step = StepContext("acme", "run-py-attach", "pay", "customer:5")

        running = self.client().call(step, "charge_card", {"amount": 5, "to": "cus_5"}, wait=0)
        self.assertIsInstance(running, StillRunning)
        # The Location names the call's intent, so that no release of the key's earlier life
        # answers it.
        self.assertRegex(running.location, r"^/v1/calls/[^?]+\?intent=[0-9]+$")
        done = self.client().attach(running.key, wait=20, location=running.location)

        self.assertIsInstance(done, Succeeded)
        self.assertEqual(running.key, done.key)
        report("python: attached after 202", done.key)

    def test_a_failed_tool_is_a_typed_failure_and_stays_failed(self):
        step = StepContext("acme", "run-py-refund", "refund")

        first = self.client().call(step, "refund", {"amount": 3})
        again = self.client().call(step, "refund", {"amount": 3})

        self.assertIsInstance(first, Failed)
        self.assertIsInstance(again, Failed)
        self.assertTrue(again.replayed)
        self.assertTrue(first.error.code)

        @exactly_once(self.client())
        def refund(amount):
            pass

        with effectledger.step("acme", "run-py-refund", "refund"):
            with self.assertRaises(ToolFailed) as failed:
                refund(3)
        self.assertEqual(first.key, failed.exception.key)

    def test_a_key_reused_for_other_arguments_is_rejected(self):
        step = StepContext("acme", "run-py-reuse", "pay", "customer:9")
        key = "py-own-key-reused"
        first = self.client().call(step, "charge_card", {"amount": 9, "to": "cus_9"}, idempotency_key=key)

        other = self.client().call(step, "charge_card", {"amount": 10, "to": "cus_9"}, idempotency_key=key)

        self.assertIsInstance(first, Succeeded)
        self.assertEqual(key, first.key)
        self.assertIsInstance(other, Rejected)
        self.assertEqual(422, other.status)
        self.assertEqual("IDEMPOTENCY_KEY_REUSED", other.error.code)
        report("python: own key, reused", key)

    def test_an_operator_approval_runs_a_settled_call_once_more(self):
        step = StepContext("acme", "run-py-bypass", "mail")
        arguments = {"to": "ops@example.com", "text": "receipt 12"}

        first = self.client().call(step, "send_email", arguments)
        approved = self.client().call(step, "send_email", arguments, bypass_approval="py-ops-ticket-1")
        retried = self.client().call(step, "send_email", arguments, bypass_approval="py-ops-ticket-1")

        self.assertIsInstance(first, Succeeded)
        self.assertIsInstance(approved, Succeeded)
        self.assertFalse(approved.replayed)
        self.assertNotEqual(first.effect_id, approved.effect_id)
        self.assertIsInstance(retried, Succeeded)
        self.assertEqual(approved.effect_id, retried.effect_id)
        report("python: bypass", first.key, bypassed=True)

        pay = StepContext("acme", "run-py-bypass", "pay", "customer:3")
        self.assertIsInstance(self.client().call(pay, "charge_card", {"amount": 3, "to": "cus_3"}), Succeeded)
        refused = self.client().call(pay, "charge_card", {"amount": 3, "to": "cus_3"}, bypass_approval="x")
        self.assertIsInstance(refused, Rejected)
        self.assertEqual(403, refused.status)
        self.assertEqual("BYPASS_NOT_ALLOWED", refused.error.code)
        with self.assertRaises(ValueError):
            self.client().call(pay, "charge_card", {"amount": 3, "to": "cus_3"}, bypass_approval=" ")

    def test_the_gateway_refusing_the_request_is_a_typed_error(self):
        step = StepContext("acme", "run-py-refused", "s")
        with self.assertRaises(GatewayError) as unknown:
            self.client().call(step, "no_such_tool", {})
        self.assertEqual(404, unknown.exception.status)
        with self.assertRaises(GatewayError) as bad_token:
            GatewayClient(URL, "not-a-token").call(step, "charge_card", {"amount": 1, "to": "x"})
        self.assertEqual(401, bad_token.exception.status)
        with self.assertRaises(KeyDerivationError) as missing:
            self.client().call(step, "charge_card", {"to": "cus_1"})
        self.assertEqual("MISSING_REQUIRED_FIELD", missing.exception.code)
        with self.assertRaises(KeyDerivationError) as not_json:
            self.client().call(step, "charge_card", {"amount": float("nan"), "to": "x"})
        self.assertEqual("ARGUMENTS_NOT_JSON", not_json.exception.code)

    def test_an_unreachable_gateway_is_unavailable_after_the_retries(self):
        closed = GatewayClient("http://127.0.0.1:9", TOKEN, retries=1, backoff=0.05)
        with self.assertRaises(Unavailable) as down:
            closed.call(StepContext("acme", "r", "s"), "charge_card", {"amount": 1, "to": "x"})
        self.assertIn("same step", str(down.exception))
        self.assertIsInstance(down.exception, EffectLedgerError)


if __name__ == "__main__":
    unittest.main()
