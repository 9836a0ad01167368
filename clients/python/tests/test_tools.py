"""The decorator and the step context variable, with a client that records what it is asked to
call (the gateway itself is exercised in tests_integration, against the real one)."""

import asyncio
import threading
import unittest

import effectledger
from effectledger import (
    CallRejected,
    CallStillRunning,
    EffectHeld,
    Rejected,
    StillRunning,
    Succeeded,
    HeldUnknown,
    exactly_once,
)
from effectledger.errors import CallError


class Recording:
    def __init__(self, answer=None):
        self.calls = []
        self.answer = answer or Succeeded("k", {"id": "ch_1"}, "ch_1", False, 1)

    def call(self, step, tool, arguments, wait=None):
        self.calls.append((step, tool, arguments, wait))
        return self.answer


class ExactlyOnceTest(unittest.TestCase):
    def test_binds_the_arguments_by_name_with_defaults_and_the_current_step(self):
        client = Recording()

        @exactly_once(client, scope=lambda a: "customer:" + a["to"])
        def charge_card(amount, to, currency="EUR", **extra):
            raise AssertionError("never run")

        with effectledger.step("acme", "run-1", "pay"):
            result = charge_card(1000, "cus_42", memo="x")

        self.assertEqual({"id": "ch_1"}, result)
        step, tool, arguments, _ = client.calls[0]
        self.assertEqual("charge_card", tool)
        self.assertEqual({"amount": 1000, "to": "cus_42", "currency": "EUR", "memo": "x"}, arguments)
        self.assertEqual(("acme", "run-1", "pay", "customer:cus_42"),
                         (step.tenant, step.run_id, step.step_id, step.scope))

    def test_refuses_a_call_outside_a_step(self):
        @exactly_once(Recording(), tool="charge")
        def charge(amount):
            pass

        with self.assertRaises(RuntimeError) as outside:
            charge(1)
        self.assertIn("outside effectledger.step", str(outside.exception))

    def test_each_outcome_but_success_is_its_typed_error(self):
        error = CallError("IDEMPOTENCY_KEY_REUSED", "other arguments", False, "use a new step")
        for answer, raised in (
            (Rejected("k", error, 422), CallRejected),
            (HeldUnknown("k", error, False), EffectHeld),
            (StillRunning("k", "/v1/calls/k"), CallStillRunning),
        ):
            with self.subTest(raised.__name__):

                @exactly_once(Recording(answer))
                def tool(x):
                    pass

                with effectledger.step("acme", "r", "s"):
                    with self.assertRaises(raised) as caught:
                        tool(1)
                self.assertEqual("k", caught.exception.key)

    def test_the_step_is_per_thread_and_restored_after_the_block(self):
        seen = []
        with effectledger.step("acme", "r", "outer"):
            with effectledger.step("acme", "r", "inner"):
                seen.append(effectledger.current_step.get().step_id)
            seen.append(effectledger.current_step.get().step_id)
            other = threading.Thread(target=lambda: seen.append(effectledger.current_step.get()))
            other.start()
            other.join()
        seen.append(effectledger.current_step.get())
        self.assertEqual(["inner", "outer", None, None], seen)

    def test_an_async_tool_is_called_with_the_step_of_its_task(self):
        client = Recording()

        @exactly_once(client)
        async def send_email(to):
            pass

        async def main():
            with effectledger.step("acme", "r", "mail"):
                return await send_email("a@example.com")

        self.assertEqual({"id": "ch_1"}, asyncio.run(main()))
        self.assertEqual("mail", client.calls[0][0].step_id)


class AttachLocationTest(unittest.TestCase):
    def test_attach_takes_only_a_gateway_location(self):
        client = effectledger.GatewayClient("http://127.0.0.1:9", "token")

        with self.assertRaises(ValueError) as refused:
            client.attach("k", location="https://elsewhere.example/v1/calls/k")

        self.assertIn("/v1/calls/", str(refused.exception))


if __name__ == "__main__":
    unittest.main()
