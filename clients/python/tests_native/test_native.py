"""The native Kafka mode against the real broker, ledger and executor ClientsIT (app module)
starts, on a Schema Registry (the project's loopback one) that demands basic credentials or a token:

    EFFECTLEDGER_BOOTSTRAP, EFFECTLEDGER_REGISTRY_URL, EFFECTLEDGER_REGISTRY_USER/PASSWORD,
    EFFECTLEDGER_REGISTRY_TOKEN
    EFFECTLEDGER_REPORT, EFFECTLEDGER_JAVA_KEY, EFFECTLEDGER_JAVA_STEP   as for tests_integration

Run with an interpreter that has confluent_kafka and avro (Debian's /usr/bin/python3 with
python3-confluent-kafka and python3-avro). Not meant to run on its own: without those variables
every test fails, it does not skip.
"""

import dataclasses
import json
import os
import threading
import time
import unittest

from effectledger import EffectLedgerError, Failed, KeyRules, StepContext, Succeeded, derive
from effectledger.native import NativeToolCallClient

CHARGE_RULES = KeyRules(ignore=["/reason"], require=["/amount", "/to"])


def env(name):
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"{name} is not set: this suite is run by ClientsIT")
    return value


def client(token=False, **options):
    credentials = (
        {"registry_token": env("EFFECTLEDGER_REGISTRY_TOKEN")}
        if token
        else {"registry_basic": (env("EFFECTLEDGER_REGISTRY_USER"), env("EFFECTLEDGER_REGISTRY_PASSWORD"))}
    )
    return NativeToolCallClient(
        env("EFFECTLEDGER_BOOTSTRAP"),
        env("EFFECTLEDGER_REGISTRY_URL"),
        **{"key_rules": {"charge_card": CHARGE_RULES}, "timeout": 60, **credentials, **options}
    )


def report(name, key):
    with open(env("EFFECTLEDGER_REPORT"), "a", encoding="utf-8") as f:
        f.write(json.dumps({"name": name, "key": key}) + "\n")


class _SendsLate:
    """A producer that waits before each send (the client sets linger.ms to 0 itself). ``sending``
    is set as a send begins: the call publishing it is listening for its reply by then (the client
    positions its reply consumer when built, and registers a call's waiter before publishing)."""

    def __init__(self, producer, seconds):
        self._producer = producer
        self._seconds = seconds
        self.sending = threading.Event()

    def produce(self, *args, **kwargs):
        self.sending.set()
        time.sleep(self._seconds)  # the late send itself: the point of this producer
        return self._producer.produce(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._producer, name)


def _intent_headers(key):
    """The headers of the intent published with ``key``, read back from tool-intents."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": env("EFFECTLEDGER_BOOTSTRAP"),
            "group.id": "py-intent-headers-" + key[:16],
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe(["tool-intents"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None and message.key() == key.encode("utf-8"):
                return {name: value.decode("utf-8") for name, value in message.headers() or ()}
        raise AssertionError(f"no intent with key {key} on tool-intents in 30 s")
    finally:
        consumer.close()


class NativeClientTest(unittest.TestCase):
    def test_the_retry_layers_take_effect_once_and_a_new_client_replaying_the_step_gets_the_result(self):
        step = StepContext("acme", "run-py-native", "pay-invoice", "customer:44")
        arguments = {"amount": 1400, "to": "cus_44", "reason": "monthly invoice"}
        answers = {}
        with client() as native:
            # the tool wrapper's retry and the model re-emitting the call, at once
            first = threading.Thread(target=lambda: answers.__setitem__("a", native.call(step, "charge_card", arguments)))
            second = threading.Thread(
                target=lambda: answers.__setitem__(
                    "b", native.call(step, "charge_card", {"to": "cus_44", "amount": 1400, "reason": "again"})
                )
            )
            first.start()
            second.start()
            first.join()
            second.join()
            retried = native.call(step, "charge_card", json.dumps(arguments))
        # the orchestrator replaying the step after a crash; with a bearer token, with which the
        # intent schema is registered and the reply's schema fetched
        with client(token=True) as replayer:
            replayed = replayer.call(step, "charge_card", {"amount": 1400, "to": "cus_44", "reason": "after the crash"})

        a, b = answers["a"], answers["b"]
        self.assertIsInstance(a, Succeeded, a)
        self.assertIsInstance(b, Succeeded, b)
        self.assertEqual(a.key, b.key)
        self.assertEqual(a.effect_id, b.effect_id)
        # one of the two sent at once caused the effect; the other joined it (or came after it)
        self.assertEqual(sorted([a.replayed, b.replayed]), [False, True])
        for again in (retried, replayed):
            self.assertIsInstance(again, Succeeded, again)
            self.assertTrue(again.replayed)
            self.assertEqual(a.key, again.key)
            self.assertEqual(a.effect_id, again.effect_id)
        report("python native: four retry layers", a.key)

    def test_the_step_the_other_clients_called_has_the_same_key_and_is_replayed(self):
        run, step_id, scope = env("EFFECTLEDGER_JAVA_STEP").split("/")
        step = StepContext("acme", run, step_id, scope)
        with client() as native:
            answer = native.call(step, "charge_card", {"amount": 700, "to": "cus_7"})

        self.assertIsInstance(answer, Succeeded, answer)
        self.assertEqual(env("EFFECTLEDGER_JAVA_KEY"), answer.key)
        self.assertEqual(derive(step, "charge_card", {"amount": 700, "to": "cus_7"}, CHARGE_RULES).key, answer.key)
        self.assertTrue(answer.replayed)
        report("python native: after java and the others", answer.key)

    def test_keys_are_derived_with_the_applied_policy_s_rules_not_only_the_code_s(self):
        # ClientsIT applied the ledger's tools.yaml (charge_card leaves /reason out of the key);
        # this client is given no rules in code, so only the applied ones make its hash right.
        step = StepContext("acme", "run-py-applied", "pay", "")
        with client(key_rules={}) as native:
            self.assertGreaterEqual(native.policy_version, 1)
            self.assertEqual(("/reason",), native.key_rules_of("charge_card").ignore)
            answer = native.call(step, "charge_card", {"amount": 5, "to": "cus_5", "reason": "any words"})
        self.assertIsInstance(answer, Succeeded, answer)
        self.assertEqual(derive(step, "charge_card", {"amount": 5, "to": "cus_5"}, CHARGE_RULES).key, answer.key)

    def test_a_duplicate_refused_while_the_first_is_in_flight_waits_for_the_first_s_result(self):
        # send_email refuses duplicates in flight; ClientsIT makes this key's effect take 4 s
        step = StepContext("acme", "run-py-native-refuse", "notify")
        arguments = {"to": "py@example.com", "subject": "receipt"}
        answers = {}
        with client() as native:
            calls = [
                threading.Thread(target=lambda n=n: answers.__setitem__(n, native.call(step, "send_email", arguments)))
                for n in range(2)
            ]
            for call in calls:
                call.start()
            for call in calls:
                call.join()

        first, second = answers[0], answers[1]
        self.assertIsInstance(first, Succeeded, first)
        self.assertIsInstance(second, Succeeded, second)
        self.assertEqual(env("EFFECTLEDGER_REFUSE_KEY_PY"), first.key)
        # both answered by the first call's own reply (the same answer but for replayed): the call
        # that caused the effect says replayed false, the one refused in flight, which waited, true
        self.assertEqual(dataclasses.replace(second, replayed=first.replayed), first)
        self.assertEqual(sorted([first.replayed, second.replayed]), [False, True])
        report("python native: duplicate refused in flight", first.key)

    def test_a_call_published_just_after_its_key_was_released_gets_its_next_life_s_answer(self):
        # reserve is released after one retryable failure; ClientsIT makes this key's first request
        # fail after 4 s. The held client is listening before the release, but its producer sends
        # 10 s late, so the ledger reads its intent after the release: it starts the key's next life.
        step = StepContext("acme", "run-py-native-release", "reserve")
        arguments = {"amount": 13}
        answers = {}
        with client() as prompt, client() as held:
            sends_late = _SendsLate(held._producer, 10)
            held._producer = sends_late
            late = threading.Thread(target=lambda: answers.__setitem__("late", held.call(step, "reserve", arguments)))
            late.start()
            self.assertTrue(
                sends_late.sending.wait(30),
                "the held call did not get to publishing its intent (so listening for its reply) within 30 s;"
                f" its thread is {'alive' if late.is_alive() else 'done'}, answers so far {answers}",
            )
            first = prompt.call(step, "reserve", arguments)
            still_waiting = late.is_alive()
            late.join(40)

        self.assertIsInstance(first, Failed, first)
        self.assertEqual("RETRIES_EXHAUSTED", first.error.code)
        self.assertEqual(env("EFFECTLEDGER_RELEASE_KEY_PY"), first.key)
        self.assertTrue(still_waiting, "the release came before the held intent was sent")
        answer = answers["late"]
        self.assertIsInstance(answer, Succeeded, answer)
        self.assertFalse(answer.replayed)
        report("python native: answered after a release", answer.key)

    def test_the_intent_carries_the_agent_s_traceparent_and_tracestate(self):
        step = StepContext("acme", "run-py-native-traced", "pay")
        traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        with client() as native:
            answer = native.call(
                step, "charge_card", {"amount": 6, "to": "cus_6"}, traceparent=traceparent, tracestate="vendor=py"
            )
        self.assertIsInstance(answer, Succeeded, answer)
        headers = _intent_headers(answer.key)
        self.assertEqual(headers.get("traceparent"), traceparent)
        self.assertEqual(headers.get("tracestate"), "vendor=py")

    def test_a_registry_demanding_credentials_refuses_a_client_without_them(self):
        with self.assertRaises(EffectLedgerError) as refused:
            NativeToolCallClient(env("EFFECTLEDGER_BOOTSTRAP"), env("EFFECTLEDGER_REGISTRY_URL"))
        self.assertIn("without credentials", str(refused.exception))
        self.assertIn("registry_basic", str(refused.exception))


if __name__ == "__main__":
    unittest.main()
