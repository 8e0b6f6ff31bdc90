"""``vcfzarr-sql serve``: PostgreSQL clients query stores over the wire protocol.

A server runs in a background thread of the test process; psycopg (libpq) connects to it.
Expected rows come from bcftools (tests/oracle.py) on the corpus' sample.vcf.gz (9 records,
3 samples, contigs 19, 20 and X), converted with 3 variants per chunk.
"""

from __future__ import annotations

import socket
import struct
import threading
import time

import oracle
import psycopg
import pytest
from server_sessions import cancel_once_busy

import vcfzarr_sql
from vcfzarr_sql.serve.pg import make_server

SAMPLE_VCF = oracle.CORPUS_SAMPLE


def _running(**kwargs):
    server = make_server("127.0.0.1", 0, **kwargs)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = _running(data_dirs=[tmp_path_factory.getbasetemp().parent])  # the stores, tmp_path
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def store(convert_once) -> str:
    return str(convert_once(SAMPLE_VCF, variants_chunk_size=3))


def _connect(server, **kwargs) -> psycopg.Connection:
    kwargs.setdefault("autocommit", True)
    return psycopg.connect(host="127.0.0.1", port=server.port, user="tester", dbname="any",
                           connect_timeout=10, **kwargs)


@pytest.fixture()
def con(server):
    with _connect(server) as connection:
        yield connection


def test_startup_parameters(con) -> None:
    assert con.info.parameter_status("server_version") == "15.0 (vcfzarr-sql)"
    assert con.info.server_version == 150000
    assert con.info.parameter_status("client_encoding") == "UTF8"
    assert con.info.parameter_status("standard_conforming_strings") == "on"
    assert con.info.backend_pid > 0


def test_simple_query_several_statements(con) -> None:
    result = con.pgconn.exec_(b"SELECT 1 AS one; CREATE TABLE t (a INT); INSERT INTO t VALUES (1), (2); "
                              b"SELECT a FROM t ORDER BY a")
    # libpq keeps the last result: the rows of the last SELECT
    assert result.status == psycopg.pq.ExecStatus.TUPLES_OK
    assert [result.get_value(i, 0) for i in range(result.ntuples)] == [b"1", b"2"]
    assert result.command_status == b"SELECT 2"
    assert con.pgconn.exec_(b"").status == psycopg.pq.ExecStatus.EMPTY_QUERY
    cur = con.execute("SELECT 1; SELECT 'two'")  # no parameters: psycopg sends a simple query
    assert cur.fetchall() == [(1,)]
    assert cur.nextset() and cur.fetchall() == [("two",)]


def test_extended_query_parameters_in_table_function(con, store) -> None:
    rows = con.execute(
        "SELECT contig, pos FROM vcf_zarr(%s) WHERE contig = %s AND pos > %s ORDER BY pos",
        (store, "20", 1200000),
    ).fetchall()
    expected = [(r.chrom, r.pos) for r in oracle.records(SAMPLE_VCF) if r.chrom == "20" and r.pos > 1200000]
    assert rows == expected and expected


def test_region_query_matches_bcftools(con, store) -> None:
    region = "20:1110000-1235000"
    cur = con.execute(
        f"SELECT contig, pos, \"end\", id, ref, alt, qual, filters, info_DP, info_AF "
        f"FROM vcf_zarr('{store}', region := '{region}')"
    )
    assert [c.type_code for c in cur.description] == [25, 20, 20, 25, 25, 1009, 700, 1009, 23, 1021]
    rows = cur.fetchall()
    expected = oracle.records(SAMPLE_VCF, region=region)
    assert len(rows) == len(expected) > 1
    for row, r in zip(rows, expected):
        assert row[:6] == (r.chrom, r.pos, r.end, r.id, r.ref, r.alt)
        assert oracle.float_equal(r.qual, row[6])
        assert row[7] == r.filters
        assert row[8] == r.info["DP"]
        af = r.info["AF"]
        assert (row[9] is None) == (af is None)
        assert af is None or all(oracle.float_equal(e, a) for e, a in zip(af, row[9], strict=True))


def test_nulls_lists_and_genotypes(con, store) -> None:
    rows = con.execute(f"SELECT id, qual, filters, fmt_DP, fmt_GT FROM vcf_zarr('{store}')").fetchall()
    records = oracle.records(SAMPLE_VCF)
    calls = oracle.calls(SAMPLE_VCF, ("GT", "DP"))
    assert len(rows) == len(records)
    for (id_, qual, filters, dp, gt), r, per_sample in zip(rows, records, calls):
        assert (id_, filters) == (r.id, r.filters)
        assert oracle.float_equal(r.qual, qual)
        assert dp == [c["DP"] for c in per_sample]  # a list over samples, NULL where missing
        # genotypes: a list per sample (JSON, as ploidy may vary), None for a lone '.'
        assert gt == [None if c["GT"] is None else list(c["GT"].alleles) for c in per_sample]
    assert any(id_ is None for id_, *_ in rows) and any(q is None for _, q, *_ in rows)


def test_text_arrays_are_quoted(con) -> None:
    value = ["a b", None, '"q"', "NULL", "back\\slash", "", "{x,y}"]
    assert con.execute("SELECT %s::VARCHAR[]", (value,)).fetchone() == (value,)
    assert con.execute("SELECT ['a b', NULL, '\"q\"', 'NULL', 'back\\slash', '', '{x,y}']").fetchone() == (value,)


def test_scalar_types(con) -> None:
    import datetime
    import decimal

    row = con.execute(
        "SELECT true, 1::TINYINT, 2::SMALLINT, 3::INT, 4::BIGINT, 1.5::FLOAT, 'nan'::DOUBLE, "
        "'-inf'::DOUBLE, 1.25::DECIMAL(10, 2), DATE '2020-02-29', TIMESTAMP '2020-01-02 03:04:05.5', "
        "'\\x00\\xff'::BLOB, NULL::INT, [1, NULL]::INT[]"
    ).fetchone()
    assert row[:6] == (True, 1, 2, 3, 4, 1.5)
    assert row[6] != row[6] and row[7] == float("-inf")
    assert row[8:] == (decimal.Decimal("1.25"), datetime.date(2020, 2, 29),
                       datetime.datetime(2020, 1, 2, 3, 4, 5, 500000), b"\x00\xff", None, [1, None])


def test_errors_keep_the_session(con, tmp_path) -> None:
    with pytest.raises(psycopg.errors.SyntaxError):
        con.execute("SELEC 1")
    with pytest.raises(psycopg.errors.UndefinedTable):
        con.execute("SELECT * FROM no_such_table")
    missing = tmp_path / "missing.zarr"
    with pytest.raises(psycopg.errors.InvalidParameterValue) as raised:
        con.execute(f"SELECT * FROM vcf_zarr('{missing}')")
    with vcfzarr_sql.connect() as local, pytest.raises(vcfzarr_sql.StoreError) as direct:
        local.sql(f"SELECT * FROM vcf_zarr('{missing}')")
    assert raised.value.diag.message_primary == str(direct.value)
    assert "\n" not in str(direct.value)
    with pytest.raises(psycopg.errors.InvalidParameterValue):
        con.execute("SELECT * FROM vcf_zarr(%s)", (str(missing),))  # extended protocol
    assert con.execute("SELECT 42").fetchone() == (42,)


def test_transactions(server) -> None:
    with _connect(server, autocommit=False) as con:
        con.execute("CREATE TABLE t AS SELECT 1 AS a")
        assert con.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        con.commit()
        assert con.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        with pytest.raises(psycopg.errors.UndefinedTable):
            con.execute("SELECT * FROM nope")
        assert con.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        con.rollback()
        assert con.execute("SELECT a FROM t").fetchall() == [(1,)]


def test_postgres_session_statements(con) -> None:
    con.execute("SET application_name = 'dbeaver'")
    con.execute("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED")
    con.execute("SET extra_float_digits = 3")
    con.execute("DISCARD ALL")
    assert con.execute("SHOW application_name").fetchone() == ("dbeaver",)
    assert con.execute("SHOW transaction_isolation").fetchone() == ("read committed",)
    assert con.execute("SHOW server_version").fetchone() == ("15.0 (vcfzarr-sql)",)
    assert con.execute("SELECT version()").fetchone()[0]
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="locked"):
        con.execute("SET threads = 1")  # a DuckDB setting goes to DuckDB, whose settings are locked
    timezone = con.execute("SELECT current_setting('TimeZone')").fetchone()[0]
    assert con.execute("SHOW TimeZone").fetchone() == (timezone,)
    con.execute("BEGIN")
    con.execute("COMMIT")


def test_two_concurrent_clients(server, store) -> None:
    barrier = threading.Barrier(2)
    results: dict[str, object] = {}

    def client(contig: str) -> None:
        try:
            with _connect(server) as con:
                barrier.wait(timeout=10)
                for _ in range(5):
                    rows = con.execute(
                        "SELECT pos FROM vcf_zarr(%s) WHERE contig = %s ORDER BY pos", (store, contig)
                    ).fetchall()
                results[contig] = [pos for (pos,) in rows]
        except Exception as err:  # reported below
            results[contig] = err

    threads = [threading.Thread(target=client, args=(c,)) for c in ("19", "20")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    records = oracle.records(SAMPLE_VCF)
    assert results == {c: [r.pos for r in records if r.chrom == c] for c in ("19", "20")}


def test_large_result_is_streamed(con) -> None:
    n = 200_000
    cur = con.execute("SELECT range AS i FROM range(%s)", (n,))
    count = total = 0
    for (i,) in cur:
        count += 1
        total += i
    assert (count, total) == (n, n * (n - 1) // 2)


def test_binary_results_equal_text_results(con, store) -> None:
    """pgJDBC asks for binary columns; psycopg's binary loaders are strict about the format."""
    query = (
        "SELECT true, 1::TINYINT, 2::SMALLINT, 3::INT, -4::BIGINT, 1.5::FLOAT, -2.25::DOUBLE, "
        "d::DECIMAL(18, 4), 0.0001::DECIMAL(10, 4), 123456789012345678901234567890::HUGEINT, "
        "DATE '1999-12-31', TIMESTAMP '2020-01-02 03:04:05.5', TIMESTAMPTZ '1970-01-01 00:00:01+00', "
        "TIME '12:34:56', INTERVAL '1 month 2 days 3 seconds', 'text', '\\x00ff'::BLOB, NULL::INT, "
        "[1, NULL]::INT[], ['a', NULL], [1.5, 2.5]::DOUBLE[], [[1], [2, 3]] "
        "FROM (VALUES (-12345.6), (0), (10000)) v(d)"
    )
    text = con.execute(query).fetchall()
    assert con.execute(query, binary=True).fetchall() == text
    # (no float4 column here: its binary value is the exact float32, its text the shortest one)
    genotypes = f"SELECT pos, alt, fmt_GT, fmt_GT_phased, fmt_DP, info_DP FROM vcf_zarr('{store}')"
    assert con.execute(genotypes, binary=True).fetchall() == con.execute(genotypes).fetchall()


def test_cancel(server) -> None:
    with _connect(server) as con:
        cancel_once_busy(server, con)
        started = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled):
            con.execute("SELECT count(*) FROM range(1000000000000) a")
        assert time.monotonic() - started < 30
        assert con.execute("SELECT 1").fetchone() == (1,)


def test_password() -> None:
    server = _running(password="s3cret")
    try:
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(host="127.0.0.1", port=server.port, user="u", password="wrong")
        with psycopg.connect(host="127.0.0.1", port=server.port, user="u", password="s3cret") as con:
            assert con.execute("SELECT 1").fetchone() == (1,)
    finally:
        server.shutdown()
        server.server_close()


# -- the extended protocol message by message (what JDBC does with a fetch size) ---------------


def _msg(kind: bytes, payload: bytes = b"") -> bytes:
    return kind + struct.pack(">i", len(payload) + 4) + payload


def _read_messages(sock: socket.socket, until: bytes = b"Z") -> list[tuple[bytes, bytes]]:
    out, buffer = [], b""
    while True:
        while len(buffer) < 5 or len(buffer) < 1 + struct.unpack(">i", buffer[1:5])[0]:
            chunk = sock.recv(65536)
            assert chunk, "server closed the connection"
            buffer += chunk
        size = struct.unpack(">i", buffer[1:5])[0]
        out.append((buffer[:1], buffer[5:1 + size]))
        buffer = buffer[1 + size:]
        if out[-1][0] == until:
            assert not buffer
            return out


def test_portal_row_limit_and_describe(server) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(struct.pack(">ii", 8, 80877103))  # SSLRequest
        assert sock.recv(1) == b"N"
        params = b"user\x00raw\x00database\x00x\x00\x00"
        sock.sendall(struct.pack(">ii", 8 + len(params), 196608) + params)
        assert [k for k, _ in _read_messages(sock)][-2:] == [b"K", b"Z"]
        query = b"SELECT range AS i FROM range(5) WHERE range >= $1\x00"
        sock.sendall(
            _msg(b"P", b"s1\x00" + query + struct.pack(">hi", 1, 20))
            + _msg(b"D", b"Ss1\x00")
            + _msg(b"B", b"p1\x00s1\x00" + struct.pack(">hhi", 0, 1, 1) + b"1" + struct.pack(">h", 0))
            + _msg(b"E", b"p1\x00" + struct.pack(">i", 3))
            + _msg(b"E", b"p1\x00" + struct.pack(">i", 3))
            + _msg(b"C", b"Pp1\x00")
            + _msg(b"S")
        )
        replies = _read_messages(sock)
        kinds = [k for k, _ in replies]
        assert kinds == [b"1", b"t", b"T", b"2", b"D", b"D", b"D", b"s", b"D", b"C", b"3", b"Z"]
        assert replies[1][1] == struct.pack(">hi", 1, 20)  # ParameterDescription: int8
        values = [payload[6:].decode() for kind, payload in replies if kind == b"D"]
        assert values == ["1", "2", "3", "4"]
        assert replies[9][1] == b"SELECT 1\x00"
        # an error skips to Sync, then the session goes on
        sock.sendall(_msg(b"P", b"\x00SELEC 1\x00\x00\x00") + _msg(b"B", b"\x00\x00" + b"\x00" * 6)
                     + _msg(b"E", b"\x00\x00\x00\x00\x00") + _msg(b"S"))
        assert [k for k, _ in _read_messages(sock)] == [b"E", b"Z"]
        sock.sendall(_msg(b"Q", b"SELECT 7\x00"))
        assert [k for k, _ in _read_messages(sock)] == [b"T", b"D", b"C", b"Z"]
        sock.sendall(_msg(b"X"))


def test_server_side_cursor(server, store) -> None:
    with _connect(server, autocommit=False) as con:
        with con.cursor(name="variants") as cur:
            cur.itersize = 2  # FETCH FORWARD 2 at a time
            cur.execute("SELECT contig, pos FROM vcf_zarr(%s) WHERE qual > %s", (store, 20))
            rows = list(cur)
        expected = [(r.chrom, r.pos) for r in oracle.records(SAMPLE_VCF) if r.qual is not None and r.qual > 20]
        assert rows == expected and len(expected) > 2
        with con.cursor(name="numbers") as cur:
            cur.execute("SELECT range FROM range(10)")
            assert cur.fetchmany(3) == [(0,), (1,), (2,)]
            assert con.execute("SELECT 'meanwhile'").fetchone() == ("meanwhile",)
            assert cur.fetchall() == [(i,) for i in range(3, 10)]
        con.commit()
    with _connect(server, autocommit=True) as con:
        with pytest.raises(psycopg.errors.NoActiveSqlTransaction):
            con.cursor(name="outside").execute("SELECT 1")
        with con.cursor(name="held", withhold=True) as cur:
            cur.execute("SELECT range FROM range(5)")
            assert cur.fetchone() == (0,)
            assert cur.fetchall() == [(1,), (2,), (3,), (4,)]


def test_failed_transaction_only_ends(server, tmp_path) -> None:
    with _connect(server, autocommit=False) as con:
        con.execute("CREATE TABLE kept (a INT)")
        con.commit()
        con.execute("INSERT INTO kept VALUES (1)")
        with pytest.raises(psycopg.errors.InvalidParameterValue):  # our error, not DuckDB's
            con.execute(f"SELECT * FROM vcf_zarr('{tmp_path / 'missing.zarr'}')")
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            con.execute("SELECT 1")
        con.commit()  # PostgreSQL rolls a failed transaction back, whatever the client says
        assert con.execute("SELECT count(*) FROM kept").fetchone() == (0,)


def test_client_leaving_mid_result(server) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        params = b"user\x00raw\x00\x00"
        sock.sendall(struct.pack(">ii", 8 + len(params), 196608) + params)
        _read_messages(sock)
        sock.sendall(_msg(b"Q", b"SELECT * FROM range(100000000)\x00"))
        assert sock.recv(65536)  # rows are coming; hang up
    with _connect(server) as con:
        assert con.execute("SELECT 1").fetchone() == (1,)


def test_transaction_statements_postgres_accepts(server) -> None:
    with _connect(server, autocommit=False) as con:
        con.execute("SELECT 1")  # psycopg opened the transaction with BEGIN
        con.execute("BEGIN")  # already in one: PostgreSQL warns, DuckDB would fail
        con.execute("COMMIT AND NO CHAIN")
        assert con.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    with _connect(server) as con:
        con.execute("COMMIT")  # none open
        con.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
        assert con.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        con.execute("ROLLBACK")
        assert con.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
