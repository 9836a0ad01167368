"""The native Kafka mode's parts that need no broker: the error when its libraries are missing,
the Schema Registry calls with credentials (against a loopback registry stand-in that demands
them), the intent schema the package carries, and the mapping of replies to results. The mode
itself runs against the real broker and ledger in tests_native (ClientsIT)."""

import base64
import json
import sys
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest import mock

from effectledger import EffectLedgerError, Failed, HeldUnknown, Rejected, Succeeded, Unavailable
from effectledger import native

REPO_SCHEMA = Path(__file__).resolve().parents[3] / "schemas" / "src" / "main" / "avro" / "ToolIntent.avsc"


class MissingLibrariesTest(unittest.TestCase):
    def test_a_client_without_confluent_kafka_says_what_to_install_and_that_the_gateway_needs_neither(self):
        with mock.patch.dict(sys.modules, {"confluent_kafka": None}):
            with self.assertRaises(EffectLedgerError) as raised:
                native.NativeToolCallClient("127.0.0.1:9", "http://127.0.0.1:9")
        message = str(raised.exception)
        self.assertIn("python3-confluent-kafka python3-avro", message)
        self.assertIn("pip install confluent-kafka avro", message)
        self.assertIn("GatewayClient", message)

    def test_a_client_without_avro_says_the_same(self):
        with mock.patch.dict(sys.modules, {"avro": None, "avro.io": None, "avro.schema": None}):
            with self.assertRaises(EffectLedgerError) as raised:
                native.NativeToolCallClient("127.0.0.1:9", "http://127.0.0.1:9")
        self.assertIn("python3-avro", str(raised.exception))


class IntentSchemaTest(unittest.TestCase):
    def test_the_package_uses_the_repository_s_one_copy_of_the_intent_schema(self):
        self.assertTrue(REPO_SCHEMA.is_file(), REPO_SCHEMA)  # the file setup.py copies into the wheel
        text = native._intent_schema()
        self.assertEqual(REPO_SCHEMA.read_text(encoding="utf-8"), text)
        schema = json.loads(text)
        self.assertEqual("ToolIntent", schema["name"])
        fields = {f["name"] for f in schema["fields"]}
        # every field the client writes must be in the schema, or the encoder fails at the first call
        for written in ("idempotencyKey", "tenant", "runId", "stepId", "tool", "arguments", "argumentsHash",
                        "businessScope", "requestedAt", "replyTopic", "bypassApproval", "traceId"):
            self.assertIn(written, fields)


class Registry(BaseHTTPRequestHandler):
    """Answers the two calls the client makes, only with the expected Authorization."""

    expected = None
    seen = []

    def log_message(self, *args):
        pass

    def _answer(self, status, body):
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _authorized(self):
        Registry.seen.append((self.command, self.path, self.headers.get("Authorization")))
        if self.headers.get("Authorization") != Registry.expected:
            self._answer(401, {"error_code": 401, "message": "Unauthorized"})
            return False
        return True

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        if self._authorized():
            json.loads(body["schema"])  # the schema travels as a JSON string
            self._answer(200, {"id": 17})

    def do_GET(self):
        if self._authorized():
            self._answer(200, {"schema": json.dumps({"type": "record", "name": "R", "fields": []})})


class RegistryCredentialsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = ThreadingHTTPServer(("127.0.0.1", 0), Registry)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.url = f"http://127.0.0.1:{cls.server.server_address[1]}/"

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def setUp(self):
        Registry.seen = []

    def test_basic_credentials_are_sent_on_every_call(self):
        Registry.expected = "Basic " + base64.b64encode(b"svc:s3cret").decode()
        registry = native._Registry(self.url, ("svc", "s3cret"), None)
        self.assertEqual(17, registry.register("tool-intents-value", REPO_SCHEMA.read_text()))
        parser = mock.Mock()
        parser.schema.parse.return_value = "parsed"
        self.assertEqual("parsed", registry.schema(5, parser))
        self.assertEqual("parsed", registry.schema(5, parser))  # cached: one GET
        self.assertEqual(
            [("POST", "/subjects/tool-intents-value/versions", Registry.expected), ("GET", "/schemas/ids/5", Registry.expected)],
            Registry.seen,
        )

    def test_a_bearer_token_is_sent_as_one(self):
        Registry.expected = "Bearer tok-123"
        registry = native._Registry(self.url, None, "tok-123")
        self.assertEqual(17, registry.register("tool-intents-value", REPO_SCHEMA.read_text()))

    def test_refused_credentials_say_which_option_to_give(self):
        Registry.expected = "Bearer right"
        with self.assertRaises(EffectLedgerError) as raised:
            native._Registry(self.url, None, "wrong").register("tool-intents-value", REPO_SCHEMA.read_text())
        self.assertIn("refused the credentials (HTTP 401)", str(raised.exception))
        with self.assertRaises(EffectLedgerError) as raised:
            native._Registry(self.url, None, None).register("tool-intents-value", REPO_SCHEMA.read_text())
        self.assertIn("without credentials", str(raised.exception))
        self.assertIn("registry_basic", str(raised.exception))

    def test_an_unreachable_registry_is_unavailable(self):
        with self.assertRaises(Unavailable):
            native._Registry("http://127.0.0.1:9", None, None).register("s", "{}")

    def test_basic_and_token_together_are_refused(self):
        with self.assertRaises(ValueError):
            native._Registry(self.url, ("a", "b"), "t")


class ReplyMappingTest(unittest.TestCase):
    def reply(self, status, **more):
        return {"idempotencyKey": "v1:k", "tenant": "acme", "status": status, **more}

    def test_in_flight_notices_keep_the_call_waiting_and_nothing_else_does(self):
        self.assertTrue(native._in_flight_notice(self.reply("IN_FLIGHT")))
        self.assertTrue(native._in_flight_notice(self.reply("REJECTED", error={"code": "DUPLICATE_IN_FLIGHT"})))
        self.assertFalse(native._in_flight_notice(self.reply("REJECTED", error={"code": "IDEMPOTENCY_KEY_REUSED"})))
        self.assertFalse(native._in_flight_notice(self.reply("REJECTED", error=None)))
        self.assertFalse(native._in_flight_notice(self.reply("SUCCEEDED")))
        self.assertFalse(native._in_flight_notice(self.reply("UNKNOWN", error={"code": "DUPLICATE_IN_FLIGHT"})))

    def test_succeeded_carries_the_result_effect_and_replay(self):
        result = native._result(self.reply("SUCCEEDED", resultJson='{"id": "ch_1"}', effectId="ch_1", replayed=True, attempts=2))
        self.assertEqual(Succeeded("v1:k", {"id": "ch_1"}, "ch_1", True, 2), result)

    def test_failed_and_unknown_keep_the_error(self):
        error = {"code": "DOWNSTREAM_4XX", "message": "card declined", "retriable": False, "correctiveAction": "new step"}
        failed = native._result(self.reply("FAILED", error=error))
        self.assertIsInstance(failed, Failed)
        self.assertEqual("DOWNSTREAM_4XX", failed.error.code)
        self.assertEqual("new step", failed.error.corrective_action)
        held = native._result(self.reply("UNKNOWN", error={**error, "code": "AMBIGUOUS"}, replayed=True))
        self.assertIsInstance(held, HeldUnknown)
        self.assertTrue(held.replayed)

    def test_a_refusal_has_the_status_the_gateway_answers_for_it(self):
        for code, status in (("IDEMPOTENCY_KEY_REUSED", 422), ("DUPLICATE_IN_FLIGHT", 409), ("UNKNOWN_TOOL", 404),
                             ("BYPASS_NOT_ALLOWED", 403), ("BYPASS_APPROVAL_INVALID", 403), ("MISSING_REQUIRED_FIELD", 400), ("WRONG_PARTITION", 500)):
            rejected = native._result(self.reply("REJECTED", error={"code": code, "message": "m", "retriable": False}))
            self.assertEqual(Rejected("v1:k", rejected.error, status), rejected)
            self.assertEqual(code, rejected.error.code)


class ReleaseReplyTest(unittest.TestCase):
    """A release's reply answers only the calls whose intent the ledger had read before it."""

    failed = Failed("v1:k", None, False)
    succeeded = Succeeded("v1:k", {}, "ch_1", False, 1)

    def test_a_release_that_read_the_call_s_intent_answers_it(self):
        waiter = native._Waiter("acme")
        waiter.published(7)
        self.assertTrue(waiter.offer(self.failed, 7))
        self.assertIs(self.failed, waiter.result)

    def test_a_release_made_before_the_intent_was_read_does_not_and_the_next_life_s_answer_does(self):
        waiter = native._Waiter("acme")
        waiter.published(8)
        self.assertFalse(waiter.offer(self.failed, 7))
        self.assertFalse(waiter.done.is_set())
        self.assertTrue(waiter.offer(self.succeeded, None))
        self.assertIs(self.succeeded, waiter.result)

    def test_a_release_before_the_broker_s_ack_is_decided_by_the_offset_that_comes(self):
        read, not_read = native._Waiter("acme"), native._Waiter("acme")
        self.assertFalse(read.offer(self.failed, 5))
        self.assertFalse(not_read.offer(self.failed, 5))
        read.published(5)
        not_read.published(6)
        self.assertIs(self.failed, read.result)
        self.assertFalse(not_read.done.is_set())

    def test_a_release_whose_ledger_could_not_tell_answers_no_call(self):
        waiter = native._Waiter("acme")
        self.assertFalse(waiter.offer(self.failed, -1))
        waiter.published(0)
        self.assertFalse(waiter.done.is_set())

    def test_no_release_answers_a_call_whose_offset_the_broker_did_not_give(self):
        waiter = native._Waiter("acme")
        self.assertFalse(waiter.offer(self.failed, 5))
        waiter.published(-1)
        self.assertFalse(waiter.done.is_set())

    def test_the_header_is_read_from_the_reply_s_headers(self):
        self.assertEqual(12, native._through([("effectledger.request.id", b"r"), ("effectledger.intents.through", b"12")]))
        self.assertIsNone(native._through([("effectledger.request.id", b"r")]))
        self.assertIsNone(native._through(None))
        self.assertEqual(-1, native._through([("effectledger.intents.through", b"x")]))


if __name__ == "__main__":
    unittest.main()
