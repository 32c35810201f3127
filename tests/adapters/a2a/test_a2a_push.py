"""A2A push notifications with the official client over JSON-RPC and REST: configs
created, read, listed and deleted per principal; every state change POSTed to a webhook on
127.0.0.1 with its token and credentials, retried with backoff, and delivered by a restarted
app when the first one could not; every refused URL named."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from a2a.types import a2a_pb2
from a2a.utils.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotFoundError,
)
from conftest import BASE, ClientMaker, make_app, send, send_task, user_message
from push_receiver import Receiver, running_receiver

from checkflow.adapters.a2a import TOKEN_HEADER, PushPolicy, PushRetry, PushURLError
from checkflow.adapters.a2a._parts import proto_value
from checkflow.adapters.a2a._view import load_task
from checkflow.hosting import WorkflowHost

FAST = PushRetry(attempts=4, first_delay=0.05, factor=2.0, max_delay=1.0, timeout=10.0)
COMPLETED = "TASK_STATE_COMPLETED"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as receiver:
        yield receiver


@pytest.fixture
def app(host: WorkflowHost) -> Any:
    return make_app(host, push_allow_local=True, push_retry=FAST)


def config(task_id: str, url: str, config_id: str = "", *, token: str = "tok-1",
           ) -> a2a_pb2.TaskPushNotificationConfig:
    return a2a_pb2.TaskPushNotificationConfig(
        task_id=task_id, id=config_id, url=url, token=token,
        authentication=a2a_pb2.AuthenticationInfo(scheme="Bearer", credentials="s3cret"))


def answer(task_id: str) -> a2a_pb2.Message:
    return user_message(a2a_pb2.Part(data=proto_value(True)), task_id=task_id)


def for_task(task_id: str, state: str) -> Any:
    return lambda d: d.task_id == task_id and d.state == state and d.status == 200


async def test_configs_are_created_read_listed_and_deleted(
        app: Any, connect: ClientMaker, receiver: Receiver) -> None:
    client = await connect()
    task = await send_task(client, user_message("ask"))
    made = await client.create_task_push_notification_config(
        config(task.id, f"{receiver.url}/a", "first"))
    assert (made.id, made.task_id, made.url, made.token) == (
        "first", task.id, f"{receiver.url}/a", "tok-1")
    unnamed = await client.create_task_push_notification_config(
        config(task.id, f"{receiver.url}/b"))
    assert unnamed.id == task.id  # the SDK's default id: the task's
    got = await client.get_task_push_notification_config(
        a2a_pb2.GetTaskPushNotificationConfigRequest(task_id=task.id, id="first"))
    assert got == made
    listed = await client.list_task_push_notification_configs(
        a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id=task.id))
    assert [c.id for c in listed.configs] == ["first", task.id]
    replaced = await client.create_task_push_notification_config(
        config(task.id, f"{receiver.url}/c", "first"))
    listed = await client.list_task_push_notification_configs(
        a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id=task.id))
    assert [c.url for c in listed.configs] == [replaced.url, unnamed.url]
    await client.delete_task_push_notification_config(
        a2a_pb2.DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="first"))
    listed = await client.list_task_push_notification_configs(
        a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id=task.id))
    assert [c.id for c in listed.configs] == [task.id]
    with pytest.raises(TaskNotFoundError):
        await client.get_task_push_notification_config(
            a2a_pb2.GetTaskPushNotificationConfigRequest(task_id=task.id, id="first"))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url=BASE, headers={"authorization": "Bearer a"}) as http:
        served = (await http.get("/.well-known/agent-card.json")).json()
    assert served["capabilities"]["pushNotifications"] is True


async def test_each_state_change_is_posted_with_the_token_and_credentials(
        connect: ClientMaker, receiver: Receiver) -> None:
    client = await connect()
    task = await send_task(client, user_message("ask", context_id="push-ctx"))
    await client.create_task_push_notification_config(
        config(task.id, f"{receiver.url}/hook", "h"))
    assert receiver.deliveries == []  # registered at INPUT_REQUIRED: only changes are sent
    done = await send_task(client, answer(task.id))
    assert done.status.state == a2a_pb2.TASK_STATE_COMPLETED
    delivery = await receiver.until(for_task(task.id, COMPLETED))
    assert delivery.path == "/hook"
    assert delivery.headers[TOKEN_HEADER.lower()] == "tok-1"
    assert delivery.headers["authorization"] == "Bearer s3cret"
    assert delivery.body["task"]["contextId"] == "push-ctx"  # A2A's JSON, camelCase
    assert delivery.body["task"]["artifacts"][0]["parts"][0]["text"] == "published"
    states = [d.state for d in receiver.deliveries]
    # A registration that races the close of the turn that paused (its answer is sent before
    # the conversation's head moves, and until then the task reads as working) may get the
    # state it was registered at once more: deliveries are at least once, never out of order.
    if states[:1] == ["TASK_STATE_INPUT_REQUIRED"]:
        states = states[1:]
    assert states[-1] == COMPLETED and set(states) <= {"TASK_STATE_WORKING", COMPLETED}


class _AnswerBetweenReads:
    """A host whose lease is read only after the task's answer ran to its end: the view's
    two reads (lineage, then the running turn) straddle the continuation's whole turn."""

    def __init__(self, host: WorkflowHost, answer: Any) -> None:
        self.host, self.answer = host, answer

    async def turns(self, *args: Any, **kwargs: Any) -> Any:
        return await self.host.turns(*args, **kwargs)

    async def find_turn(self, *args: Any, **kwargs: Any) -> Any:
        if self.answer is not None:
            answer, self.answer = self.answer, None
            await answer()
        return await self.host.find_turn(*args, **kwargs)


async def test_a_continuation_ending_between_the_views_reads_is_not_shown_as_its_pause(
        host: WorkflowHost, connect: ClientMaker) -> None:
    # what the deliverer once posted after WORKING: the pause again, read from a lineage
    # that predated the answer's end
    client = await connect()
    task = await send_task(client, user_message("ask", context_id="race-ctx"))
    assert task.status.state == a2a_pb2.TASK_STATE_INPUT_REQUIRED

    async def answer_it() -> None:
        done = await send_task(client, answer(task.id))
        assert done.status.state == a2a_pb2.TASK_STATE_COMPLETED

    racing = _AnswerBetweenReads(host, answer_it)
    view = await load_task(racing, task.id, "alice")  # type: ignore[arg-type]
    assert racing.answer is None  # the answer did run between the two reads
    assert view is not None and view.state == a2a_pb2.TASK_STATE_COMPLETED


async def test_a_message_s_own_config_is_used_for_its_new_task(
        connect: ClientMaker, receiver: Receiver) -> None:
    client = await connect()
    inline = a2a_pb2.TaskPushNotificationConfig(url=f"{receiver.url}/inline", token="t")
    task = await send_task(client, user_message("hello"),
                           task_push_notification_config=inline)
    delivery = await receiver.until(for_task(task.id, COMPLETED))
    assert delivery.headers[TOKEN_HEADER.lower()] == "t"
    listed = await client.list_task_push_notification_configs(
        a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id=task.id))
    assert [c.url for c in listed.configs] == [f"{receiver.url}/inline"]


async def test_a_refused_delivery_is_retried_with_backoff(
        connect: ClientMaker, receiver: Receiver) -> None:
    receiver.answers = [500, 503]
    client = await connect()
    task = await send_task(client, user_message("ask"))
    await client.create_task_push_notification_config(config(task.id, receiver.url))
    await send_task(client, answer(task.id))
    await receiver.until(for_task(task.id, COMPLETED))
    first, second, third = receiver.deliveries[:3]
    assert [d.status for d in (first, second, third)] == [500, 503, 200]
    assert second.at - first.at >= FAST.delay(1) * 0.9
    assert third.at - second.at >= FAST.delay(2) * 0.9


async def test_a_pending_delivery_survives_a_restart(
        host: WorkflowHost, stores: Any, workflow: Any, connect: ClientMaker,
        receiver: Receiver) -> None:
    receiver.default = 503  # the webhook is down while the first app runs
    once = PushRetry(attempts=1, first_delay=0.0, rescan_seconds=3600)
    first = make_app(host, push_allow_local=True, push_retry=once)
    client = await connect(target=first)
    async with first.router.lifespan_context(first):  # the first process, until it stops
        task = await send_task(client, user_message("ask"))
        await client.create_task_push_notification_config(config(task.id, receiver.url))
        await send_task(client, answer(task.id))
        await receiver.until(lambda d: d.state == COMPLETED and d.status == 503)
    assert receiver.accepted() == []
    receiver.default = 200  # the webhook is back; a new process (same stores) starts
    again = WorkflowHost(workflow, session_store=stores[0], checkpoint_storage=stores[1])
    second = make_app(again, push_allow_local=True, push_retry=once)
    async with second.router.lifespan_context(second):
        delivery = await receiver.until(for_task(task.id, COMPLETED))
    assert delivery.headers["authorization"] == "Bearer s3cret"
    assert len(receiver.accepted(COMPLETED)) == 1
    # delivered is recorded: a third start sends nothing more
    third = make_app(again, push_allow_local=True, push_retry=once)
    before = len(receiver.deliveries)
    async with third.router.lifespan_context(third):
        pass
    assert len(receiver.deliveries) == before


async def test_another_principal_cannot_see_or_change_the_configs(
        connect: ClientMaker, receiver: Receiver) -> None:
    alice, bob = await connect("alice"), await connect("bob")
    task = await send_task(alice, user_message("ask"))
    await alice.create_task_push_notification_config(config(task.id, receiver.url, "mine"))
    with pytest.raises(TaskNotFoundError):
        await bob.list_task_push_notification_configs(
            a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id=task.id))
    with pytest.raises(TaskNotFoundError):
        await bob.get_task_push_notification_config(
            a2a_pb2.GetTaskPushNotificationConfigRequest(task_id=task.id, id="mine"))
    with pytest.raises(TaskNotFoundError):
        await bob.delete_task_push_notification_config(
            a2a_pb2.DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="mine"))
    with pytest.raises(TaskNotFoundError):
        await bob.create_task_push_notification_config(config(task.id, receiver.url, "x"))
    # bob's own task in a context of the same name has its own configs
    own = await send_task(bob, user_message("ask", context_id=task.context_id))
    await bob.create_task_push_notification_config(config(own.id, receiver.url, "his"))
    mine = await alice.list_task_push_notification_configs(
        a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id=task.id))
    assert [c.id for c in mine.configs] == ["mine"]


async def test_an_unknown_task_is_task_not_found(connect: ClientMaker,
                                                 receiver: Receiver) -> None:
    client = await connect()
    for call in (
        client.create_task_push_notification_config(config("t-nope", receiver.url)),
        client.list_task_push_notification_configs(
            a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id="t-nope")),
        client.get_task_push_notification_config(
            a2a_pb2.GetTaskPushNotificationConfigRequest(task_id="t-nope", id="x")),
        client.delete_task_push_notification_config(
            a2a_pb2.DeleteTaskPushNotificationConfigRequest(task_id="t-nope", id="x")),
    ):
        with pytest.raises(TaskNotFoundError):
            await call


@pytest.mark.parametrize(("url", "why"), [
    ("ftp://example.com/hook", "scheme must be http or https"),
    ("http:///nohost", "has no host"),
    ("http://user:pw@example.com/", "credentials belong in 'authentication'"),
    ("http://127.0.0.1:9/hook", "loopback"),
    ("http://[::1]:9/hook", "loopback"),
    ("http://169.254.169.254/latest/meta-data", "link-local"),
    ("http://[fe80::1]/hook", "link-local"),
    ("http://[::ffff:127.0.0.1]/hook", "loopback"),
    ("http://10.0.0.1/hook", "private"),
    ("http://localhost:9/hook", "loopback"),
    ("http://no-such-host.invalid/hook", "cannot be resolved"),
])
async def test_refused_webhook_urls_are_invalid_params_naming_why(
        host: WorkflowHost, connect: ClientMaker, url: str, why: str) -> None:
    strict = make_app(host)  # the defaults: public addresses only
    client = await connect(target=strict)
    task = await send_task(client, user_message("ask"))
    with pytest.raises(InvalidParamsError, match=why):
        await client.create_task_push_notification_config(config(task.id, url))
    listed = await client.list_task_push_notification_configs(
        a2a_pb2.ListTaskPushNotificationConfigsRequest(task_id=task.id))
    assert list(listed.configs) == []


async def test_a_message_with_a_refused_webhook_starts_no_task(
        host: WorkflowHost, connect: ClientMaker) -> None:
    client = await connect(target=make_app(host))
    inline = a2a_pb2.TaskPushNotificationConfig(url="http://127.0.0.1:9/hook")
    with pytest.raises(InvalidParamsError, match="loopback"):
        await send(client, user_message("hello", context_id="refused"),
                   task_push_notification_config=inline)
    assert await host.list_conversations(principal="alice") == []


async def test_the_allowlist_takes_only_its_hosts_and_trusts_them(
        host: WorkflowHost, connect: ClientMaker, receiver: Receiver) -> None:
    listed = make_app(host, push_allowed_hosts=["127.0.0.0/8"], push_retry=FAST)
    client = await connect(target=listed)
    task = await send_task(client, user_message("ask"))
    await client.create_task_push_notification_config(config(task.id, receiver.url))
    with pytest.raises(InvalidParamsError, match="not in the adapter's allowed hosts"):
        await client.create_task_push_notification_config(
            config(task.id, "http://192.0.2.1/hook", "other"))
    await send_task(client, answer(task.id))
    await receiver.until(for_task(task.id, COMPLETED))


async def test_without_push_notifications_the_card_says_so_and_configs_are_refused(
        host: WorkflowHost, connect: ClientMaker, receiver: Receiver) -> None:
    off = make_app(host, push_notifications=False)
    client = await connect(target=off)
    task = await send_task(client, user_message("ask"))
    with pytest.raises(PushNotificationNotSupportedError):
        await client.create_task_push_notification_config(config(task.id, receiver.url))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=off),
                                 base_url=BASE, headers={"authorization": "Bearer a"}) as http:
        card = (await http.get("/.well-known/agent-card.json")).json()
    assert card["capabilities"].get("pushNotifications", False) is False


@pytest.mark.parametrize(("policy", "url", "ok"), [
    (PushPolicy(), "https://93.184.215.14/hook", True),
    (PushPolicy(), "http://[2001:4860:4860::8888]/hook", True),
    (PushPolicy(allow_local=True), "http://127.0.0.1/hook", True),
    (PushPolicy(allow_local=True), "gopher://127.0.0.1/", False),
    (PushPolicy(allowed_hosts=["hooks.example"]), "https://hooks.example/x", True),
    (PushPolicy(allowed_hosts=["hooks.example"]), "https://93.184.215.14/x", False),
    (PushPolicy(allowed_hosts=["10.1.0.0/16"]), "http://10.1.2.3/x", True),
    (PushPolicy(allowed_hosts=["10.1.0.0/16"]), "http://10.2.0.1/x", False),
])
async def test_the_policy(policy: PushPolicy, url: str, ok: bool) -> None:
    if ok:
        await policy.check(url)
    else:
        with pytest.raises(PushURLError) as refused:
            await policy.check(url)
        assert refused.value.url == url and refused.value.reason


def test_retry_options_are_checked() -> None:
    assert [PushRetry(first_delay=1, factor=2, max_delay=5).delay(n) for n in (1, 2, 3, 4)] \
        == [1, 2, 4, 5]
    with pytest.raises(ValueError, match="attempts"):
        PushRetry(attempts=0)
    with pytest.raises(ValueError, match="factor"):
        PushRetry(factor=0.5)


async def test_a_cancel_and_a_native_answer_are_state_changes_too(
        host: WorkflowHost, connect: ClientMaker, receiver: Receiver) -> None:
    quick = make_app(host, push_allow_local=True,
                     push_retry=PushRetry(attempts=2, first_delay=0.05, rescan_seconds=0.1))
    client = await connect(target=quick)
    cancelled = await send_task(client, user_message("ask", context_id="c-cancel"))
    await client.create_task_push_notification_config(config(cancelled.id, receiver.url))
    await client.cancel_task(a2a_pb2.CancelTaskRequest(id=cancelled.id))
    await receiver.until(for_task(cancelled.id, "TASK_STATE_CANCELED"))
    # an answer over the native API relays no A2A turn: the rescan finds the change
    paused = await send_task(client, user_message("ask", context_id="c-native"))
    await client.create_task_push_notification_config(config(paused.id, receiver.url))
    (request_id,) = list(paused.metadata["checkflow"]["pendingRequestIds"])
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=quick), base_url=BASE,
                                 headers={"authorization": "Bearer alice"}) as http:
        ran = await http.post("/v1/conversations/c-native/runs",
                              json={"responses": {request_id: True}})
    assert ran.status_code == 200, ran.text
    async with quick.router.lifespan_context(quick):  # as a server runs it
        delivery = await receiver.until(for_task(paused.id, COMPLETED))
    assert delivery.body["task"]["artifacts"][0]["parts"][0]["text"] == "published"
