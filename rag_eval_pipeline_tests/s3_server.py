"""An S3-compatible server on 127.0.0.1 for tests: moto's server mode, as dagster-aws's tests use.

`s3_server` (one per test session) starts it and points the AWS SDK of this process at it
through the environment (dummy credentials, `AWS_ENDPOINT_URL`); `s3_bucket` makes a fresh,
empty bucket per test and yields its URL. `s3_environment` is the same environment for a
subprocess (a `rag-eval run`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import s3fs
from moto.server import ThreadedMotoServer

DUMMY_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def s3_environment(endpoint: str) -> dict[str, str]:
    """The variables that send the AWS SDK (boto3, s3fs) to `endpoint` with dummy credentials."""
    return {**DUMMY_CREDENTIALS, "AWS_ENDPOINT_URL": endpoint}


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """The endpoint URL of a moto S3 server on 127.0.0.1, set in this process's environment."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    with pytest.MonkeyPatch.context() as patch:
        for name, value in s3_environment(endpoint).items():
            patch.setenv(name, value)
        s3fs.S3FileSystem.clear_instance_cache()
        try:
            yield endpoint
        finally:
            s3fs.S3FileSystem.clear_instance_cache()
            server.stop()


@pytest.fixture
def s3_bucket(s3_server: str) -> str:
    """`s3://<bucket>` of a new, empty bucket on the test server."""
    name = f"rag-eval-{uuid.uuid4().hex[:12]}"
    s3_client(s3_server).create_bucket(Bucket=name)
    return f"s3://{name}"


def s3_client(endpoint: str) -> Any:
    """A boto3 S3 client of the test server (to look at what fsspec cannot: pending uploads);
    its credentials come from the environment `s3_server` set."""
    return boto3.client("s3", endpoint_url=endpoint)


def bucket_keys(endpoint: str, bucket_url: str) -> list[str]:
    """Every object key in the bucket of `bucket_url`, sorted."""
    bucket = bucket_url.removeprefix("s3://")
    pages = s3_client(endpoint).get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return sorted(item["Key"] for page in pages for item in page.get("Contents", []))


def pending_uploads(endpoint: str, bucket_url: str) -> list[str]:
    """Keys of multipart uploads started and neither completed nor aborted."""
    bucket = bucket_url.removeprefix("s3://")
    listing = s3_client(endpoint).list_multipart_uploads(Bucket=bucket)
    return [upload["Key"] for upload in listing.get("Uploads", [])]
