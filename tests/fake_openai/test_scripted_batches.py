"""The scripted server's Files + Batch API, driven over real HTTP by the bare ``openai`` client (sync and async).

Every response is parsed by the SDK's own types (``Batch``, ``FileObject``, ``ChatCompletion``), so the wire
format is the one a batch client meets at OpenAI. No timing assertions: batches run with no processing delay
(or a long one that a cancel cuts short) and tests poll until a final status.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

pytest.importorskip("h11")
openai = pytest.importorskip("openai")

from openai.types import Batch, FileObject  # noqa: E402
from openai.types.chat import ChatCompletion  # noqa: E402

from consistency.fake_openai import (  # noqa: E402
    BatchBehaviour,
    Fault,
    Reply,
    ScriptedRequest,
    ScriptedServer,
    probability_rule,
)

FINAL = ("completed", "failed", "expired", "cancelled")


def line(custom_id: str, text: str | None = None, **override: Any) -> dict[str, Any]:
    body = {"model": "scripted", "messages": [{"role": "user", "content": text or f"Will {custom_id} happen?"}]}
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body, **override}


def jsonl(lines: list[Any]) -> bytes:
    return "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines).encode()


def sync_client(srv: ScriptedServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="test-key", max_retries=0)


def submit(client: openai.OpenAI, data: bytes, **options: Any) -> Batch:
    uploaded = client.files.create(file=("requests.jsonl", io.BytesIO(data)), purpose="batch")
    return client.batches.create(
        input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h", **options
    )


def wait(client: openai.OpenAI, batch_id: str) -> tuple[Batch, list[Batch]]:
    """Poll until the batch is final: (the final batch, every state seen on the way)."""
    seen = []
    for _ in range(5000):
        batch = client.batches.retrieve(batch_id)
        seen.append(batch)
        if batch.status in FINAL:
            return batch, seen
        time.sleep(0.01)
    raise AssertionError(f"batch {batch_id} never finished: {seen[-1].status}")


def read_lines(client: openai.OpenAI, file_id: str | None) -> dict[str, dict[str, Any]]:
    if file_id is None:
        return {}
    rows = [json.loads(x) for x in client.files.content(file_id).text.splitlines()]
    assert all(set(row) == {"id", "custom_id", "response", "error"} for row in rows)
    by_id = {row["custom_id"]: row for row in rows}
    assert len(by_id) == len(rows)
    return by_id


def test_full_lifecycle_shapes_counters_and_a_restarted_client() -> None:
    n = 30
    with ScriptedServer() as srv:
        client = sync_client(srv)
        data = jsonl([line(f"q{i}") for i in range(n)])
        uploaded = client.files.create(file=("requests.jsonl", io.BytesIO(data)), purpose="batch")
        assert isinstance(uploaded, FileObject)
        assert (uploaded.purpose, uploaded.bytes, uploaded.filename) == ("batch", len(data), "requests.jsonl")
        assert client.files.retrieve(uploaded.id).id == uploaded.id
        assert client.files.content(uploaded.id).content == data

        created = client.batches.create(
            input_file_id=uploaded.id,
            endpoint="/v1/chat/completions",
            completion_window="24h",
            metadata={"run": "test"},
        )
        assert created.status == "validating" and created.metadata == {"run": "test"}

        # a client process restarted meanwhile finds its batch by id
        batch, seen = wait(sync_client(srv), created.id)
        assert batch.status == "completed"
        assert batch.request_counts.model_dump() == {"total": n, "completed": n, "failed": 0}
        assert batch.error_file_id is None and batch.errors is None
        assert batch.in_progress_at and batch.finalizing_at and batch.completed_at
        assert batch.model == "scripted"

        output = read_lines(client, batch.output_file_id)
        assert set(output) == {f"q{i}" for i in range(n)}
        prompt = completion = 0
        for custom_id, row in output.items():
            assert row["error"] is None and row["id"].startswith("batch_req_")
            assert row["response"]["status_code"] == 200 and row["response"]["request_id"]
            answer = ChatCompletion.model_validate(row["response"]["body"])
            direct = client.chat.completions.create(
                model="scripted", messages=[{"role": "user", "content": f"Will {custom_id} happen?"}]
            )
            assert answer.choices[0].message.content == direct.choices[0].message.content
            prompt += answer.usage.prompt_tokens
            completion += answer.usage.completion_tokens
        assert batch.usage.input_tokens == prompt and batch.usage.output_tokens == completion
        assert srv.billed == {"prompt_tokens": 2 * prompt, "completion_tokens": 2 * completion}  # batch + direct

        output_file = client.files.retrieve(batch.output_file_id)
        assert output_file.purpose == "batch_output"
        deleted = client.files.delete(uploaded.id)
        assert deleted.deleted and deleted.id == uploaded.id
        with pytest.raises(openai.NotFoundError, match="No such File object"):
            client.files.retrieve(uploaded.id)

        assert srv.batches.executions == {f"q{i}": 1 for i in range(n)}
        assert (srv.batches.files_uploaded, srv.batches.batches_created) == (1, 1)
        requests = srv.http_requests
        assert requests["POST /v1/files"] == 1 and requests["POST /v1/batches"] == 1
        assert requests["GET /v1/batches/{batch_id}"] == len(seen)
        assert requests["POST /v1/chat/completions"] == n
        assert requests["DELETE /v1/files/{file_id}"] == 1


def test_async_client() -> None:
    async def main() -> None:
        async with ScriptedServer() as srv:
            client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="test-key", max_retries=0)
            data = jsonl([line(f"a{i}") for i in range(5)])
            uploaded = await client.files.create(file=("in.jsonl", data), purpose="batch")
            batch = await client.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
            while batch.status not in FINAL:
                await asyncio.sleep(0.01)
                batch = await client.batches.retrieve(batch.id)
            assert batch.status == "completed" and batch.request_counts.completed == 5
            text = (await client.files.content(batch.output_file_id)).text
            assert sorted(json.loads(x)["custom_id"] for x in text.splitlines()) == [f"a{i}" for i in range(5)]

    asyncio.run(main())


def test_faults_become_error_lines_and_a_hang_does_not_block() -> None:
    faults = {
        "limited": Fault.rate_limit(0.1),
        "broken": Fault.server_error(503),
        "refused": Fault.error(400, "bad parameter", "invalid_value"),
        "stuck": Fault.hang(3600),
        "dropped": Fault.drop(),
        "garbled": Fault.malformed(),
    }
    base = probability_rule()

    def rule(request: ScriptedRequest) -> Reply | Fault:
        return faults.get(request.last_user_text) or base(request)

    with ScriptedServer(rule) as srv:
        client = sync_client(srv)
        rows = [line(name, name) for name in faults] + [line("fine"), line("no-messages", body={"model": "scripted"})]
        batch, _ = wait(client, submit(client, jsonl(rows)).id)
        assert batch.status == "completed"
        assert batch.request_counts.model_dump() == {"total": 8, "completed": 1, "failed": 7}
        assert set(read_lines(client, batch.output_file_id)) == {"fine"}
        errors = read_lines(client, batch.error_file_id)
        status = {k: (v["response"] or {}).get("status_code") for k, v in errors.items()}
        assert status == {
            "limited": 429,
            "broken": 503,
            "refused": 400,
            "no-messages": 400,
            "stuck": None,
            "dropped": None,
            "garbled": None,
        }
        assert errors["limited"]["response"]["body"]["error"]["code"] == "rate_limit_exceeded"
        assert errors["refused"]["response"]["body"]["error"]["message"] == "bad parameter"
        assert errors["limited"]["error"] is None
        assert errors["stuck"]["error"]["code"] == "request_timeout"
        assert {errors[k]["error"]["code"] for k in ("dropped", "garbled")} == {"server_error"}
        assert srv.batches.executions == dict.fromkeys([*faults, "fine", "no-messages"], 1)


def test_expired_batch_runs_part_of_its_lines() -> None:
    with ScriptedServer(batch=BatchBehaviour(expire_next=1)) as srv:
        client = sync_client(srv)
        batch, _ = wait(client, submit(client, jsonl([line(f"e{i}") for i in range(10)])).id)
        assert batch.status == "expired" and batch.expired_at
        assert batch.request_counts.model_dump() == {"total": 10, "completed": 5, "failed": 5}
        done = read_lines(client, batch.output_file_id)
        expired = read_lines(client, batch.error_file_id)
        assert len(done) == 5 and set(done) | set(expired) == {f"e{i}" for i in range(10)}
        assert all(row["response"] is None and row["error"]["code"] == "batch_expired" for row in expired.values())
        assert srv.batches.executions == dict.fromkeys(done, 1)  # expired lines never ran

        again, _ = wait(client, submit(client, jsonl([line(k) for k in expired])).id)  # the next one completes
        assert again.status == "completed" and again.request_counts.completed == 5
        assert set(srv.batches.executions) == {f"e{i}" for i in range(10)}
        assert set(srv.batches.executions.values()) == {1}


def test_cancel_while_in_progress() -> None:
    with ScriptedServer(batch=BatchBehaviour(processing_delay=600)) as srv:
        client = sync_client(srv)
        created = submit(client, jsonl([line(f"c{i}") for i in range(40)]))
        while client.batches.retrieve(created.id).status == "validating":
            time.sleep(0.01)
        cancelling = client.batches.cancel(created.id)
        assert cancelling.status in ("cancelling", "cancelled") and cancelling.cancelling_at
        batch, _ = wait(client, created.id)
        assert batch.status == "cancelled" and batch.cancelled_at
        counts = batch.request_counts
        assert counts.total == 40 and counts.completed + counts.failed == 40 and counts.completed < 40
        done = read_lines(client, batch.output_file_id)
        skipped = read_lines(client, batch.error_file_id)
        assert {row["error"]["code"] for row in skipped.values()} == {"batch_cancelled"}
        assert srv.batches.executions == dict.fromkeys(done, 1)
        with pytest.raises(openai.ConflictError, match="Cannot cancel a batch with status 'cancelled'"):
            client.batches.cancel(created.id)


def test_counts_advance_while_in_progress() -> None:
    with ScriptedServer(batch=BatchBehaviour(processing_delay=1.0)) as srv:
        client = sync_client(srv)
        batch, seen = wait(client, submit(client, jsonl([line(f"p{i}") for i in range(40)])).id)
        assert batch.status == "completed"
        assert "in_progress" in {b.status for b in seen}
        done = [b.request_counts.completed for b in seen if b.request_counts]
        assert done == sorted(done) and done[-1] == 40


def test_failed_uploads() -> None:
    with ScriptedServer(batch=BatchBehaviour(fail_next_uploads=2)) as srv:
        client = sync_client(srv)
        data = jsonl([line("u0")])
        with pytest.raises(openai.InternalServerError):
            client.files.create(file=("in.jsonl", data), purpose="batch")
        srv.batches.behaviour.upload_failure_status = 503
        with pytest.raises(openai.InternalServerError) as failure:
            client.files.create(file=("in.jsonl", data), purpose="batch")
        assert failure.value.status_code == 503
        uploaded = client.files.create(file=("in.jsonl", data), purpose="batch")
        assert uploaded.bytes == len(data)
        assert srv.batches.files_uploaded == 1 and srv.http_requests["POST /v1/files"] == 3


@pytest.mark.parametrize(
    ("rows", "code", "line_no"),
    [
        ([line("a"), "{not json", line("b")], "invalid_json_line", 2),
        ([line("a"), {k: v for k, v in line("b").items() if k != "custom_id"}], "missing_required_parameter", 2),
        ([line("a"), line("b"), line("a")], "duplicate_custom_id", 3),
        ([line("a", url="/v1/embeddings")], "url_mismatch", 1),
        ([line("a", method="GET")], "invalid_value", 1),
        ([line("a"), line("b", body={"model": "other", "messages": [{"role": "user", "content": "x"}]})],
         "model_mismatch", 2),
    ],
)  # fmt: skip
def test_invalid_input_files_fail_naming_the_line(rows: list[Any], code: str, line_no: int) -> None:
    with ScriptedServer() as srv:
        client = sync_client(srv)
        batch, _ = wait(client, submit(client, jsonl(rows)).id)
        assert batch.status == "failed" and batch.failed_at
        assert [(e.code, e.line) for e in batch.errors.data] == [(code, line_no)]
        assert batch.errors.object == "list" and batch.errors.data[0].message
        assert batch.output_file_id is None and srv.batches.executions == {}


def test_empty_file_and_limits() -> None:
    with ScriptedServer(batch=BatchBehaviour(max_requests=3)) as srv:
        client = sync_client(srv)
        empty, _ = wait(client, submit(client, b"").id)
        assert [(e.code, e.line) for e in empty.errors.data] == [("empty_file", None)]
        many, _ = wait(client, submit(client, jsonl([line(f"m{i}") for i in range(4)])).id)
        assert [(e.code, e.line) for e in many.errors.data] == [("too_many_tasks", 4)]
        assert "maximum of 3 requests" in many.errors.data[0].message
        srv.batches.behaviour.max_bytes = 400
        rows = [line("x", "y" * 150), line("z", "w" * 150), line("v")]
        big, _ = wait(client, submit(client, jsonl(rows)).id)
        assert [(e.code, e.line) for e in big.errors.data] == [("file_too_large", 2)]
        srv.batches.behaviour.max_bytes = 10_000
        fits, _ = wait(client, submit(client, jsonl(rows)).id)
        assert fits.status == "completed"
        assert srv.batches.executions == {"x": 1, "z": 1, "v": 1}


def test_list_pagination() -> None:
    with ScriptedServer() as srv:
        client = sync_client(srv)
        uploaded = client.files.create(file=("in.jsonl", jsonl([line("l")])), purpose="batch")
        ids = [
            client.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
            ).id
            for _ in range(5)
        ]
        first = client.batches.list(limit=2)
        assert [b.id for b in first.data] == ids[::-1][:2] and first.has_more
        assert [b.id for b in client.batches.list(limit=2)] == ids[::-1]  # the SDK follows ``after``
        last = client.batches.list(limit=2, after=ids[1])
        assert [b.id for b in last.data] == [ids[0]] and not last.has_more
        with pytest.raises(openai.BadRequestError):
            client.batches.list(limit=101)
        outputs = client.files.list(purpose="batch_output")
        assert [f.purpose for f in outputs] == ["batch_output"] * 5
        files = [f.id for f in client.files.list(limit=2, order="asc")]  # the SDK follows ``after``
        assert files[0] == uploaded.id and len(files) == 6


def test_refusals() -> None:
    with ScriptedServer() as srv:
        client = sync_client(srv)
        with pytest.raises(openai.NotFoundError, match="No such File object: file-nope"):
            client.batches.create(input_file_id="file-nope", endpoint="/v1/chat/completions", completion_window="24h")
        other = client.files.create(file=("f.jsonl", jsonl([line("r")])), purpose="user_data")
        with pytest.raises(openai.BadRequestError, match="purpose 'batch'"):
            client.batches.create(input_file_id=other.id, endpoint="/v1/chat/completions", completion_window="24h")
        with pytest.raises(openai.BadRequestError, match="not supported"):
            client.batches.create(input_file_id=other.id, endpoint="/v1/embeddings", completion_window="24h")
        with pytest.raises(openai.NotFoundError, match="No such Batch object"):
            client.batches.retrieve("batch_nope")
        with pytest.raises(openai.BadRequestError, match="purpose"):
            client.files.create(file=("f.jsonl", b"{}"), purpose="nonsense")  # type: ignore[arg-type]


def test_stopping_the_server_ends_running_batches_and_reset_clears_counters() -> None:
    srv = ScriptedServer(batch=BatchBehaviour(processing_delay=600)).start()
    try:
        client = sync_client(srv)
        created = submit(client, jsonl([line(f"s{i}") for i in range(10)]))
        while client.batches.retrieve(created.id).status == "validating":
            time.sleep(0.01)
        assert srv.batches.batches_created == 1 and srv.http_requests["POST /v1/batches"] == 1
        srv.reset()
        assert (srv.batches.batches_created, srv.batches.files_uploaded, srv.batches.executions) == (0, 0, {})
        assert srv.http_requests == {} and srv.billed == {"prompt_tokens": 0, "completion_tokens": 0}
        assert client.batches.retrieve(created.id).status == "in_progress"  # the batch itself stays
    finally:
        srv.stop()
    assert srv._thread is None  # stopped although the batch had ten minutes to go


def test_module_entry_point_takes_the_batch_flags() -> None:
    command = [sys.executable, "-m", "consistency.fake_openai", "--port", "0", "--fail-uploads", "1"]
    command += ["--upload-failure-status", "502", "--batch-max-requests", "2", "--expire-batches", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        banner = process.stdout.readline()
        assert "batches: expire 1, failed uploads 1" in banner
        client = openai.OpenAI(base_url=re.search(r"http://127\.0\.0\.1:\d+/v1", banner).group(0), api_key="k")
        client = client.with_options(max_retries=0)
        with pytest.raises(openai.APIStatusError) as refused:
            client.files.create(file=("in.jsonl", jsonl([line("a")])), purpose="batch")
        assert refused.value.status_code == 502
        too_many, _ = wait(client, submit(client, jsonl([line("a"), line("b"), line("c")])).id)
        assert [(e.code, e.line) for e in too_many.errors.data] == [("too_many_tasks", 3)]
        expired, _ = wait(client, submit(client, jsonl([line("a"), line("b")])).id)
        assert expired.status == "expired" and expired.request_counts.completed == 1
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=5) == 0
    finally:
        process.kill()
        process.wait()
