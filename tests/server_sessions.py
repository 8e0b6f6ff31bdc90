"""A ``vcfzarr-sql serve`` (PostgreSQL protocol) on port 0 in a background thread, a data
directory holding one store, and what tests say to it (psycopg, raw protocol messages)."""

from __future__ import annotations

import shutil
import struct
import threading
import time
from pathlib import Path

import oracle
import psycopg
import pytest

from vcfzarr_sql.serve.pg import make_server

SAMPLE_VCF = oracle.CORPUS_SAMPLE
PASSWORD = "correct horse battery staple"


def _running(**kwargs):
    server = make_server("127.0.0.1", 0, **kwargs)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture()
def serving():
    """``serving(**make_server_kwargs)`` -> a running server, stopped after the test."""
    servers = []

    def start(**kwargs):
        servers.append(_running(**kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def data_dir(convert_once, tmp_path_factory) -> Path:
    """A data directory holding one store, ``sample.zarr`` (a copy of the converted sample)."""
    root = tmp_path_factory.mktemp("served")
    shutil.copytree(convert_once(SAMPLE_VCF, variants_chunk_size=3), root / "sample.zarr")
    return root


def _connect(server, **kwargs) -> psycopg.Connection:
    kwargs.setdefault("autocommit", True)
    kwargs.setdefault("connect_timeout", 10)
    return psycopg.connect(host="127.0.0.1", port=server.port, user="tester", dbname="any", **kwargs)


def _msg(kind: bytes, payload: bytes = b"") -> bytes:
    return kind + struct.pack(">i", len(payload) + 4) + payload


def _startup(user: bytes = b"raw") -> bytes:
    params = b"user\x00" + user + b"\x00\x00"
    return struct.pack(">ii", 8 + len(params), 196608) + params


def _wait_for(condition, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()
