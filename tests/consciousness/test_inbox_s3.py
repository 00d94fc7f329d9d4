"""The store inbox on object storage (an S3-compatible server, moto, on 127.0.0.1): two consumers on
separate store clients, whose reads may lag by the read-consistency interval (1 s), never share an
event: a lease is taken under the store's lease lock, on the table's latest version."""

from __future__ import annotations

import time
import uuid

from conftest import S3_BUCKET as BUCKET

import mindcore
from mindcore.consciousness import Inbox


def test_inbox_on_object_storage(s3: dict[str, str]) -> None:
    uri = f"s3://{BUCKET}/{uuid.uuid4().hex}"
    one = Inbox(mindcore.open(uri, storage_options=s3), agent="assistant", visibility_timeout=1.0)
    two = Inbox(mindcore.open(uri, storage_options=s3), agent="assistant", visibility_timeout=30.0)
    ids = one.push_many([{"kind": "plan", "text": f"step {i}"} for i in range(3)])
    assert [e.id for e in one.receive(2)] == ids[:2]
    assert [(e.id, e.attempts) for e in two.receive(5)] == [(ids[2], 1)]  # at once: no stale view
    time.sleep(1.1)  # one's leases run out
    assert [(e.id, e.attempts) for e in two.receive(5)] == [(ids[0], 2), (ids[1], 2)]
    assert one.receive(5) == []
    two.nack([ids[2]])
    assert [(e.id, e.attempts) for e in one.receive(5)] == [(ids[2], 2)]
    two.ack(ids[:2])
    one.ack([ids[2]])
    assert len(Inbox(mindcore.open(uri, storage_options=s3), agent="assistant")) == 0
