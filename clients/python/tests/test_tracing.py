"""The agent's trace on a gateway call, against a loopback gateway that records the headers it is
sent (the native mode's intent headers are checked against the real broker in tests_native)."""

import http.server
import threading
import unittest
from types import SimpleNamespace
from unittest import mock

from effectledger import GatewayClient, StepContext, tracing

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class _Recording(http.server.BaseHTTPRequestHandler):
    seen = []

    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        _Recording.seen.append(self.headers)  # names case-insensitive, as HTTP has them
        body = b'{"key":"k-1","status":"SUCCEEDED","result":{"id":"ch_1"},"attempts":1}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class TracingTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recording)
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.client = GatewayClient(f"http://127.0.0.1:{cls.server.server_port}", "t", retries=0)
        cls.step = StepContext("acme", "run-trace", "pay")

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        cls.server.server_close()

    def test_a_call_carries_the_traceparent_and_tracestate_it_is_given(self):
        answer = self.client.call(
            self.step, "charge_card", {"amount": 1}, traceparent=TRACEPARENT, tracestate="vendor=opaque"
        )
        self.assertEqual(answer.key, "k-1")
        self.assertEqual(_Recording.seen[-1].get("traceparent"), TRACEPARENT)
        self.assertEqual(_Recording.seen[-1].get("tracestate"), "vendor=opaque")

    def test_a_call_without_a_trace_carries_none(self):
        self.client.call(self.step, "charge_card", {"amount": 2})
        self.assertNotIn("traceparent", _Recording.seen[-1])
        self.assertNotIn("tracestate", _Recording.seen[-1])

    def test_refuses_what_is_not_w3c_trace_context_before_sending(self):
        sent = len(_Recording.seen)
        for bad in (
            "0af7651916cd43dd8448eb211c80319c",
            "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",
            "00-00000000000000000000000000000000-b7ad6b7169203331-01",
            "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",
            "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
        ):
            with self.subTest(bad=bad), self.assertRaisesRegex(ValueError, "not W3C trace context"):
                self.client.call(self.step, "charge_card", {"amount": 3}, traceparent=bad)
        with self.assertRaisesRegex(ValueError, "tracestate goes with a traceparent"):
            self.client.call(self.step, "charge_card", {"amount": 3}, tracestate="vendor=x")
        for state in ("vendor=x\r\nX-Injected: 1", "v=" + "x" * 600):
            with self.subTest(state=state[:20]), self.assertRaisesRegex(ValueError, "tracestate"):
                self.client.call(self.step, "charge_card", {"amount": 3}, traceparent=TRACEPARENT, tracestate=state)
        self.assertEqual(len(_Recording.seen), sent)



class CurrentSpanTest(unittest.TestCase):
    """The current OpenTelemetry span's context, read with opentelemetry-api's names. This machine
    has no Python OpenTelemetry (Debian packages none, and there is no PyPI here), so its
    ``trace`` module is stood in for by one with the same attributes; with the real package this
    path runs against it instead."""

    def _with_current(self, context):
        span = SimpleNamespace(get_span_context=lambda: context)
        return mock.patch.object(tracing, "_otel_trace", SimpleNamespace(get_current_span=lambda: span))

    def test_the_current_span_is_carried_as_w3c_trace_context(self):
        state = SimpleNamespace(to_header=lambda: "vendor=opaque")
        context = SimpleNamespace(
            is_valid=True, trace_id=0x0AF7651916CD43DD8448EB211C80319C, span_id=0xB7AD6B7169203331, trace_flags=1, trace_state=state
        )
        with self._with_current(context):
            self.assertEqual(tracing.trace_headers(), {"traceparent": TRACEPARENT, "tracestate": "vendor=opaque"})
            # a traceparent given wins over the current span
            given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"
            self.assertEqual(tracing.trace_headers(given), {"traceparent": given})

    def test_an_invalid_current_span_or_none_carries_nothing(self):
        with self._with_current(SimpleNamespace(is_valid=False)):
            self.assertEqual(tracing.trace_headers(), {})
        with mock.patch.object(tracing, "_otel_trace", None):
            self.assertEqual(tracing.trace_headers(), {})


if __name__ == "__main__":
    unittest.main()
