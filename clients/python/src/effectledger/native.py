"""The native Kafka mode: calls without the gateway, made exactly as the Java ``ToolCallClient`` and
the TypeScript ``NativeToolCallClient`` make them. A ``ToolIntent`` goes to ``tool-intents`` in the
Schema Registry wire format (magic byte, 4-byte schema id, Avro binary), keyed by the idempotency
key, through Kafka's Java default partitioner (murmur2: the ledger refuses an intent in another
partition than its key's, and librdkafka's own default, CRC32, would put most keys elsewhere); the
reply is read read_committed from the reply topic, every partition positioned at its end before the
intent is published so that no reply is missed; an in-flight notice (or a ``refuse`` tool's
DUPLICATE_IN_FLIGHT) keeps the call waiting for the final reply of the key's first call, and a key's
release answers only a call whose intent the ledger had read before it (``_Waiter``).

Unlike the Java client, which assigns itself only the reply partition of each key it waits on, this
client reads every partition of its reply topic (as the TypeScript one, which kafkajs leaves no
choice): simpler, and the same answers, but on a reply topic shared by many clients each reads every
reply. Under load, give each client a reply topic of its own (``reply_topic="tool-results.<name>"``,
created beforehand: the ledger answers on ``tool-results`` or any ``tool-results.<suffix>``).

It needs two libraries the rest of the package does not: ``confluent_kafka`` (librdkafka) and
``avro``. Debian has both (``apt-get install python3-confluent-kafka python3-avro``; PyPI's
``confluent-kafka`` and ``avro`` are the same). The Schema Registry's REST calls (register the
intent schema, fetch a reply's schema by id) are the standard library's ``urllib``, as in the
gateway client, with HTTP Basic or a bearer token as managed registries require.
"""

from __future__ import annotations

import base64
import datetime
import io
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Set, Tuple, Union

from .errors import CallError, EffectLedgerError, Unavailable
from .gateway import CallResult, Failed, HeldUnknown, Rejected, StillRunning, Succeeded
from .keys import KeyRules, StepContext, derive
from .tracing import trace_headers

# The status the gateway answers for each refusal, so that a Rejected means the same in both modes.
_REJECTED_STATUS = {
    "IDEMPOTENCY_KEY_REUSED": 422,
    "DUPLICATE_IN_FLIGHT": 409,
    "UNKNOWN_TOOL": 404,
    "BYPASS_NOT_ALLOWED": 403,
    "BYPASS_APPROVAL_INVALID": 403,
    "ARGUMENTS_TOO_LARGE": 413,
    "ARGUMENTS_NOT_JSON": 400,
    "ARGUMENTS_NOT_OBJECT": 400,
    "MISSING_REQUIRED_FIELD": 400,
    "INVALID_INTENT": 400,
}


def _libraries():
    try:
        import avro.io
        import avro.schema
        import confluent_kafka
    except ImportError as e:
        raise EffectLedgerError(
            f"the native Kafka mode needs confluent_kafka and avro ({e}): apt-get install "
            "python3-confluent-kafka python3-avro, or pip install confluent-kafka avro; "
            "or call through the gateway (GatewayClient), which needs neither"
        ) from None
    return confluent_kafka, avro


def _intent_schema() -> str:
    """ToolIntent.avsc: inside the package when it was built as a wheel (setup.py copies it), else
    the one copy in the repository (schemas/src/main/avro), for the package used from its sources."""
    here = Path(__file__).resolve().parent
    for candidate in [here / "schemas" / "ToolIntent.avsc"] + [
        parent / "schemas" / "src" / "main" / "avro" / "ToolIntent.avsc" for parent in here.parents
    ]:
        if candidate.is_file():
            return candidate.read_text(encoding="utf-8")
    raise EffectLedgerError("ToolIntent.avsc is missing from the package; rebuild it with setup.py")


POLICY_TOPIC = "tool-policy"


class _Registry:
    """The two Schema Registry calls the wire format needs, with the registry's credentials."""

    def __init__(self, url: str, basic: Optional[Tuple[str, str]], token: Optional[str]) -> None:
        if basic and token:
            raise ValueError("give the Schema Registry basic credentials or a bearer token, not both")
        self.url = url.rstrip("/")
        self.authorization = None
        if basic:
            self.authorization = "Basic " + base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
        elif token:
            self.authorization = "Bearer " + token
        self._schemas: Dict[int, Any] = {}
        self._lock = threading.Lock()

    def _request(self, method: str, path: str, body: Optional[bytes]) -> Mapping[str, Any]:
        request = urllib.request.Request(self.url + path, data=body, method=method)
        request.add_header("Accept", "application/vnd.schemaregistry.v1+json")
        if body is not None:
            request.add_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        if self.authorization:
            request.add_header("Authorization", self.authorization)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            if e.code in (401, 403):
                raise EffectLedgerError(
                    f"the Schema Registry at {self.url} refused "
                    f"{'the credentials' if self.authorization else 'a request without credentials'} "
                    f"(HTTP {e.code}); give registry_basic=(user, password) or registry_token"
                ) from None
            raise EffectLedgerError(f"the Schema Registry at {self.url} answered HTTP {e.code} to {path}") from None
        except (urllib.error.URLError, OSError) as e:
            raise Unavailable(f"the Schema Registry at {self.url} is unreachable ({e})") from None

    def register(self, subject: str, schema: str) -> int:
        body = json.dumps({"schema": json.dumps(json.loads(schema))}).encode("utf-8")
        answer = self._request("POST", f"/subjects/{urllib.parse.quote(subject, safe='')}/versions", body)
        return int(answer["id"])

    def schema(self, schema_id: int, avro) -> Any:
        with self._lock:
            known = self._schemas.get(schema_id)
        if known is None:
            text = self._request("GET", f"/schemas/ids/{schema_id}", None)["schema"]
            known = avro.schema.parse(text)
            with self._lock:
                self._schemas[schema_id] = known
        return known


INTENTS_THROUGH_HEADER = "effectledger.intents.through"
# a call's own id on its intent; a final answer names the id of the intent that started the key's
# life, so a call whose id it is not joined that action in flight: for it, the answer is a replay
REQUEST_ID_HEADER = "effectledger.request.id"


class _Waiter:
    """One call waiting for its final reply. It registers before its intent is published (so that
    no reply slips past it) and so may see replies the ledger made before it read the intent; all
    answer it (a duplicate read later gets the same answer), except a release's: the key is
    forgotten, and an intent read after the release starts the key's next life. A release's reply
    names the last intent the ledger had read (header ``effectledger.intents.through``, -1 when it
    cannot tell); it answers this call only if its intent's offset is at or below that. Until the
    broker acknowledged the intent its offset is unknown, and a release that came first is kept
    and decided then. As the Java client's ``PendingReply``."""

    def __init__(self, tenant: str) -> None:
        self.tenant = tenant
        self.request_id = str(uuid.uuid4())
        self.result: Optional[CallResult] = None
        self.done = threading.Event()
        self._lock = threading.Lock()
        self._offset = -1
        self._release: Optional[CallResult] = None
        self._release_through = -1

    def published(self, offset: int) -> None:
        """The broker took the call's intent at ``offset`` of its partition."""
        with self._lock:
            self._offset = offset
            answer = self._release if self._release is not None and 0 <= offset <= self._release_through else None
            self._release = None
        if answer is not None:
            self._answer(answer)

    def offer(self, result: CallResult, through: Optional[int]) -> bool:
        """A final reply for the call's key: ``through`` is None for one that answers every call
        waiting, else the last intent the releasing ledger had read. True when it answered."""
        with self._lock:
            if through is None or 0 <= self._offset <= through:
                answers = True
            else:
                if self._offset < 0 and through >= self._release_through:
                    self._release, self._release_through = result, through
                answers = False
        if answers:
            self._answer(result)
        return answers

    def _answer(self, result: CallResult) -> None:
        if not self.done.is_set():
            self.result = result
            self.done.set()


def _through(headers: Any) -> Optional[int]:
    """The ``effectledger.intents.through`` header of a reply: None when absent, -1 unreadable."""
    for name, value in headers or ():
        if name == INTENTS_THROUGH_HEADER:
            try:
                return int(value.decode("ascii") if isinstance(value, (bytes, bytearray)) else value)
            except (ValueError, UnicodeDecodeError, AttributeError):
                return -1
    return None


class NativeToolCallClient:
    """Publishes intents to Kafka and reads their replies, without the gateway.

    ``bootstrap_servers``: Kafka's ``bootstrap.servers``. ``registry_url``: the Schema Registry,
    with ``registry_basic=(user, password)`` or ``registry_token`` when it demands credentials.
    ``key_rules``: per tool, the same pointers as its ``key:`` in the ledger's tools.yaml (the key
    and the ledger's hash check depend on them). ``reply_topic``: where replies come (the ledger
    must allow the name; ``tool-results.<suffix>`` gives this client a topic of its own).
    ``kafka_config``: more librdkafka settings (security, client.id) for the producer and consumer.
    ``timeout``: how long a call waits for its final reply before answering ``StillRunning``.
    ``follow_policy``: read the applied tool policy from ``tool-policy`` (``effectledger tools
    apply``) and derive each tool it names with its key rules, which then win over ``key_rules``;
    followed while the client runs, so a rules change reaches it without a restart.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        registry_url: str,
        *,
        registry_basic: Optional[Tuple[str, str]] = None,
        registry_token: Optional[str] = None,
        key_rules: Optional[Mapping[str, KeyRules]] = None,
        reply_topic: str = "tool-results",
        intents_topic: str = "tool-intents",
        kafka_config: Optional[Mapping[str, Any]] = None,
        timeout: float = 30.0,
        follow_policy: bool = True,
    ) -> None:
        kafka, self._avro = _libraries()
        self._registry = _Registry(registry_url, registry_basic, registry_token)
        schema_text = _intent_schema()
        self._intent_writer = self._avro.io.DatumWriter(self._avro.schema.parse(schema_text))
        self._intent_header = b"\x00" + self._registry.register(intents_topic + "-value", schema_text).to_bytes(4, "big")
        self._key_rules = dict(key_rules or {})
        self._reply_topic = reply_topic
        self._intents_topic = intents_topic
        self._timeout = timeout
        common = {"bootstrap.servers": bootstrap_servers, "log_level": 3, **(kafka_config or {})}
        self._producer = kafka.Producer(
            {
                **common,
                # Kafka's Java default partitioner; librdkafka's default (CRC32) would put the
                # intent in another partition than the ledger expects (WRONG_PARTITION).
                "partitioner": "murmur2_random",
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 0,
            }
        )
        self._consumer = kafka.Consumer(
            {
                **common,
                "group.id": "effectledger-py-replies-" + str(uuid.uuid4()),
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
            }
        )
        self._waiters: Dict[str, Set[_Waiter]] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        try:
            metadata = self._consumer.list_topics(reply_topic, timeout=10)
            topic = metadata.topics.get(reply_topic)
            if topic is None or topic.error is not None or not topic.partitions:
                raise Unavailable(f"the reply topic {reply_topic} does not exist or has no partitions")
            # Every partition from its end now, before any intent is published: no reply to an
            # intent of this client can be before it.
            ends = []
            for partition in sorted(topic.partitions):
                tp = kafka.TopicPartition(reply_topic, partition)
                _, high = self._consumer.get_watermark_offsets(tp, timeout=10)
                ends.append(kafka.TopicPartition(reply_topic, partition, high))
            self._consumer.assign(ends)
        except kafka.KafkaException as e:
            self._producer.flush(0)
            self._consumer.close()
            raise Unavailable(f"could not reach Kafka at {bootstrap_servers}: {e}") from None
        self._reader = threading.Thread(target=self._read, name="effectledger-replies", daemon=True)
        self._reader.start()
        self._applied_rules: Dict[str, KeyRules] = {}
        self._policy_version = 0
        self._policy_reader: Optional[threading.Thread] = None
        if follow_policy:
            self._follow_policy(kafka, common)

    # -- calls --------------------------------------------------------------------------------

    def call(
        self,
        step: StepContext,
        tool: str,
        arguments: Union[Mapping[str, Any], str],
        *,
        timeout: Optional[float] = None,
        bypass_approval: Optional[str] = None,
        traceparent: Optional[str] = None,
        tracestate: Optional[str] = None,
    ) -> CallResult:
        """Derives the key (with the tool's key rules), publishes the intent and waits for the
        final reply. ``StillRunning`` when the timeout passed first: the action takes effect at
        most once either way, and calling again with the same step finds it. Raises
        :class:`KeyDerivationError` for arguments that give no key, :class:`Unavailable` when the
        intent could not be published (nothing ran; call again with the same step).
        ``traceparent`` and ``tracestate``: the agent's trace (W3C), when not the current
        OpenTelemetry span's; they go on the intent's Kafka headers."""
        if self._closed.is_set():
            raise EffectLedgerError("the client is closed")
        if bypass_approval is not None and (not isinstance(bypass_approval, str) or not bypass_approval.strip()):
            raise ValueError("bypass_approval must be an operator's approval; leave it out for a normal call")
        derived = derive(step, tool, arguments, self.key_rules_of(tool))
        trace = trace_headers(traceparent, tracestate)
        arguments_json = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False, allow_nan=False)
        waiter = _Waiter(step.tenant)
        with self._lock:
            self._waiters.setdefault(derived.key, set()).add(waiter)
        try:
            value = self._encode(
                {
                    "idempotencyKey": derived.key,
                    "tenant": step.tenant,
                    "runId": step.run_id,
                    "stepId": step.step_id,
                    "tool": tool,
                    "arguments": arguments_json,
                    "argumentsHash": derived.arguments_hash,
                    "businessScope": step.scope,
                    # timestamp-millis: avro takes an aware datetime
                    "requestedAt": datetime.datetime.now(datetime.timezone.utc),
                    "replyTopic": self._reply_topic,
                    "bypassApproval": bypass_approval,
                    "traceId": None,
                }
            )
            waiter.published(self._publish(derived.key, value, waiter.request_id, trace))
            if not waiter.done.wait(self._timeout if timeout is None else timeout):
                return StillRunning(derived.key, "")
            return waiter.result  # type: ignore[return-value]
        finally:
            with self._lock:
                waiting = self._waiters.get(derived.key)
                if waiting is not None:
                    waiting.discard(waiter)
                    if not waiting:
                        del self._waiters[derived.key]

    def key_rules_of(self, tool: str) -> KeyRules:
        """The rules ``tool``'s keys are derived with: the applied policy's when it names the tool,
        else those given as ``key_rules``, else none."""
        applied = self._applied_rules.get(tool)
        if applied is not None:
            return applied
        return self._key_rules.get(tool, KeyRules())

    @property
    def policy_version(self) -> int:
        """The applied policy version keys are derived with; 0 when none was read."""
        return self._policy_version

    def close(self) -> None:
        """Stops; calls still waiting answer ``StillRunning`` at once (their keys stay valid)."""
        self._closed.set()
        with self._lock:
            for key, waiting in self._waiters.items():
                for waiter in waiting:
                    waiter.result = StillRunning(key, "")
                    waiter.done.set()
        self._reader.join(timeout=5)
        if self._policy_reader is not None:
            self._policy_reader.join(timeout=5)
        self._producer.flush(5)

    def __enter__(self) -> "NativeToolCallClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the applied policy ---------------------------------------------------------------------

    def _follow_policy(self, kafka, common: Mapping[str, Any]) -> None:
        """Reads ``tool-policy`` (partition 0: every partition holds the same documents) from its
        start to its end now, then follows it on a thread of its own. No topic: rules from code."""
        consumer = kafka.Consumer(
            {
                **common,
                "group.id": "effectledger-py-policy-" + str(uuid.uuid4()),
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                # never create it by asking: it needs one partition per tool-intents partition
                "allow.auto.create.topics": False,
            }
        )
        try:
            topic = consumer.list_topics(POLICY_TOPIC, timeout=10).topics.get(POLICY_TOPIC)
            if topic is None or topic.error is not None or not topic.partitions:
                consumer.close()
                return
            start = kafka.TopicPartition(POLICY_TOPIC, 0, kafka.OFFSET_BEGINNING)
            _, high = consumer.get_watermark_offsets(kafka.TopicPartition(POLICY_TOPIC, 0), timeout=10)
            consumer.assign([start])
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and message.error() is None and message.value() is not None:
                    self._apply_policy(message.value())
                elif message is None:
                    position = consumer.position([kafka.TopicPartition(POLICY_TOPIC, 0)])[0].offset
                    if position < 0 or position >= high:
                        break
        except kafka.KafkaException:
            consumer.close()
            return

        def follow() -> None:
            try:
                while not self._closed.is_set():
                    message = consumer.poll(1.0)
                    if message is not None and message.error() is None and message.value() is not None:
                        self._apply_policy(message.value())
            finally:
                consumer.close()

        self._policy_reader = threading.Thread(target=follow, name="effectledger-policy", daemon=True)
        self._policy_reader.start()

    def _apply_policy(self, document: bytes) -> None:
        try:
            policy = json.loads(document)
            version = int(policy.get("version", 0))
            if version <= self._policy_version:
                return
            rules = {}
            for tool, versions in policy.get("keys", {}).items():
                current = versions[0] if versions else {}
                rules[tool] = KeyRules(current.get("ignore", []), current.get("require", []))
        except (ValueError, TypeError, AttributeError, IndexError):
            return  # not a policy document this client reads: keep the rules it has
        self._applied_rules = rules
        self._policy_version = version

    # -- the wire -----------------------------------------------------------------------------

    def _encode(self, intent: Mapping[str, Any]) -> bytes:
        out = io.BytesIO()
        out.write(self._intent_header)
        self._intent_writer.write(intent, self._avro.io.BinaryEncoder(out))
        return out.getvalue()

    def _publish(self, key: str, value: bytes, request_id: str, trace: Mapping[str, str]) -> int:
        """Publishes an intent, with its trace context headers; its offset once the broker took
        it."""
        outcome: Dict[str, Any] = {}
        acked = threading.Event()

        def on_delivery(error, message) -> None:
            outcome["error"] = error
            outcome["offset"] = message.offset() if error is None else -1
            acked.set()

        try:
            self._producer.produce(
                self._intents_topic,
                key=key.encode("utf-8"),
                value=value,
                headers=[(REQUEST_ID_HEADER, request_id.encode("utf-8"))]
                + [(name, text.encode("utf-8")) for name, text in trace.items()],
                on_delivery=on_delivery,
            )
        except BufferError as e:
            raise Unavailable(f"could not publish the intent for key {key} ({e}); call again with the same step") from None
        deadline = time.monotonic() + 30
        while not acked.is_set() and time.monotonic() < deadline:
            self._producer.poll(0.05)
        if not acked.is_set() or outcome.get("error") is not None:
            raise Unavailable(
                f"could not publish the intent for key {key} ({outcome.get('error', 'no broker acknowledgement in 30 s')});"
                " call again with the same step"
            )
        return outcome["offset"]

    def _read(self) -> None:
        while not self._closed.is_set():
            message = self._consumer.poll(0.1)
            if message is None or message.error() is not None or message.value() is None:
                continue
            reply = self._decode(message.value())
            if reply is None or _in_flight_notice(reply):
                continue  # not a reply this client can read, or in flight: wait on for the result
            with self._lock:
                waiting = [w for w in self._waiters.get(reply.get("idempotencyKey", ""), ()) if w.tenant == reply.get("tenant")]
            through = _through(message.headers())
            for_request = _header(message.headers(), REQUEST_ID_HEADER)
            for waiter in waiting:
                waiter.offer(_result(reply, _joined(reply, for_request, waiter.request_id)), through)
        self._consumer.close()

    def _decode(self, value: bytes) -> Optional[Mapping[str, Any]]:
        if len(value) < 5 or value[0] != 0:
            return None
        try:
            schema = self._registry.schema(int.from_bytes(value[1:5], "big"), self._avro)
            reader = self._avro.io.DatumReader(schema)
            return reader.read(self._avro.io.BinaryDecoder(io.BytesIO(value[5:])))
        except Exception:  # noqa: BLE001 - a record this client cannot read is skipped, as in Java
            return None


def _in_flight_notice(reply: Mapping[str, Any]) -> bool:
    """IN_FLIGHT (a duplicate attached on a ``coalesce`` tool) and the ``refuse`` tool's
    DUPLICATE_IN_FLIGHT refusal both say the first call of the key is still running: the call
    waits for that call's final reply, as the Java client's does (and the gateway client attaches
    on its 409)."""
    if reply.get("status") == "IN_FLIGHT":
        return True
    error = reply.get("error") or {}
    return reply.get("status") == "REJECTED" and error.get("code") == "DUPLICATE_IN_FLIGHT"


def _header(headers: Any, name: str) -> Optional[str]:
    """A header's last value as text; None when absent or unreadable."""
    found: Optional[str] = None
    for key, value in headers or ():
        if key == name:
            try:
                found = value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)
            except UnicodeDecodeError:
                found = None
    return found


def _joined(reply: Mapping[str, Any], for_request: Optional[str], mine: str) -> bool:
    """Whether a settled answer names another call's request id: this call joined the action in
    flight, and the answer is, for it, a replay (as the Java client's ``PendingReply.asSeenBy``)."""
    return reply.get("status") in ("SUCCEEDED", "FAILED") and for_request is not None and for_request != mine


def _result(reply: Mapping[str, Any], joined: bool = False) -> CallResult:
    """``joined``: the call came while the same action was in flight, so its answer is a replay."""
    key = reply["idempotencyKey"]
    error = reply.get("error")
    call_error = CallError.of(error) if error else None
    replayed = bool(reply.get("replayed")) or joined
    status = reply.get("status")
    if status == "SUCCEEDED":
        result_json = reply.get("resultJson")
        return Succeeded(
            key=key,
            result=None if result_json is None else json.loads(result_json),
            effect_id=reply.get("effectId"),
            replayed=replayed,
            attempts=int(reply.get("attempts") or 0),
        )
    if status == "FAILED":
        return Failed(key, call_error, replayed)
    if status == "UNKNOWN":
        return HeldUnknown(key, call_error, replayed)
    return Rejected(key, call_error, _REJECTED_STATUS.get(call_error.code if call_error else "", 500))
