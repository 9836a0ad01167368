"""The agent's trace on a gateway call, against a loopback gateway that records the headers it is
sent (the native mode's intent headers are checked against the real broker in tests_native)."""

import http.server
import threading
import unittest

from effectledger import GatewayClient, StepContext

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
        self.assertEqual(len(_Recording.seen), sent)


if __name__ == "__main__":
    unittest.main()
