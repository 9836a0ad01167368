"""Sends one receipt e-mail exactly once through a local gateway, three times over.

Start the broker, the processor, an executor for the messaging lane and the gateway first
(docs/integrating.md, "HTTP (any language)"), then, from clients/python:

    PYTHONPATH=src python3 examples/send_receipt.py
"""

import os
import sys

import effectledger
from effectledger import GatewayClient, Succeeded, exactly_once

client = GatewayClient(
    os.environ.get("EFFECTLEDGER_GATEWAY_URL", "http://127.0.0.1:8088"),
    os.environ.get("EFFECTLEDGER_TOKEN", "dev-token"),
    wait=10,
)


@exactly_once(client)
def send_email(to, subject, body):
    """Sends an e-mail (performed by the ledger's executor, once)."""


run_id = sys.argv[1] if len(sys.argv) > 1 else "example-run-1"
with effectledger.step("acme", run_id, "send-receipt"):
    for attempt in range(3):  # a retrying agent: one e-mail, three answers
        result = send_email("ada@example.com", "Your receipt", "Thanks!")
        print(f"attempt {attempt + 1}: {result}")

answer = client.call(
    effectledger.StepContext("acme", run_id, "send-receipt"),
    "send_email",
    {"body": "Thanks!", "subject": "Your receipt", "to": "ada@example.com"},  # other order
)
assert isinstance(answer, Succeeded) and answer.replayed, answer
print(f"key {answer.key}: replayed={answer.replayed}")
