"""SQL text as statements: splitting, command tags, and PostgreSQL-only statements.

The text is split where sqlglot's tokenizer finds ``;`` outside strings and comments
(:mod:`vcfzarr_sql.engine.sql_text`, as everywhere), and DuckDB's parser names each statement's
kind. Clients and BI tools send PostgreSQL statements DuckDB does not know (``SET application_name``,
``SET SESSION CHARACTERISTICS ...``, ``DISCARD ALL``, ``SHOW transaction_isolation``); those
are answered here, harmlessly, without reaching DuckDB (where a failed statement would abort
an open transaction).

Neither tokenizing nor DuckDB's ``extract_statements`` lets other threads run for long texts
(an 8.9 MB statement held the GIL 7.8 s: every session stopped), so a statement longer than
:data:`~vcfzarr_sql.engine.sql_text.MAX_TOKENIZED` is classified by its first word, and a text of
several statements longer than that is refused (SQLSTATE 54000).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb
from sqlglot.tokens import TokenType

from vcfzarr_sql.engine import sql_text
from vcfzarr_sql.engine.functions import TABLE_FUNCTIONS
from vcfzarr_sql.serve.pg.sqlstate import PgError

#: Kind of a statement DuckDB cannot parse.
UNPARSED = "UNPARSED"

#: Statements accepted and ignored when DuckDB does not know them (PostgreSQL session state).
#: ``SAVEPOINT``/``RELEASE`` (psycopg's nested transactions) are accepted as no-ops.
IGNORED = ("SET", "RESET", "DISCARD", "DEALLOCATE", "LISTEN", "UNLISTEN", "SAVEPOINT", "RELEASE")

#: ``SET``/``SHOW`` of one setting, matched whole against the statement's :func:`_bare` text
#: (patterns whose time grows linearly with the text: a match holds the GIL, every session waits)
_SET = re.compile(r"SET\s+(?:SESSION\s+|LOCAL\s+)?([\w.]+)(?:\s*=|\s+TO\s)\s*(.*)",
                  re.IGNORECASE | re.DOTALL)
_SHOW = re.compile(r"SHOW\s+([\w.]+)", re.IGNORECASE)
#: ``$n`` in a statement too long to tokenize (a ``$n`` inside a string counts too).
_PARAMETER = re.compile(r"\$(\d+)")
#: First words of a statement that returns rows as a SELECT does (DuckDB's kind SELECT).
_QUERY_WORDS = ("SELECT", "WITH", "VALUES", "FROM", "TABLE", "(")
_TO_SAVEPOINT = re.compile(r"^\s*ROLLBACK\s+(?:WORK\s+|TRANSACTION\s+)?TO\b", re.IGNORECASE)


#: The names the engine registers table-function calls under (``vcf_zarr_5335f9a62062``,
#: :attr:`~vcfzarr_sql.engine.functions.ScanSpec.relation_name`): no client may create one.
_FUNCTION_NAMES = "|".join(sorted(TABLE_FUNCTIONS, key=len, reverse=True))
_RELATION_NAME = re.compile(rf"\b(?:{_FUNCTION_NAMES})_[0-9a-f]{{12}}\b", re.IGNORECASE)


def refuse_relation_names(statement: Statement) -> None:
    """PgError 42939 when ``statement`` creates or renames something under a name the engine
    registers its table-function calls under (in a shared ``--writable`` database, a view over
    a call whose store is gone would read it silently). Linear in the text.

    >>> refuse_relation_names(Statement("CREATE TABLE vcf_zarr_5335f9a62062 (x INT)", "CREATE"))
    Traceback (most recent call last):
    ...
    vcfzarr_sql.serve.pg.sqlstate.PgError: vcf_zarr_5335f9a62062: names like this are reserved for vcf_zarr(...) calls
    """
    if statement.keyword in ("CREATE", "ALTER") and (found := _RELATION_NAME.search(statement.sql)):
        raise PgError("42939", f"{found.group()}: names like this are reserved for vcf_zarr(...) calls")


def _bare(sql: str) -> str:
    """``sql`` without surrounding white space and one final ``;``."""
    sql = sql.strip()
    return sql[:-1].rstrip() if sql.endswith(";") else sql


@dataclass(frozen=True)
class Statement:
    """One SQL statement: its text, DuckDB's statement type name, and how many ``$n`` it uses."""

    sql: str
    kind: str
    parameters: int = 0

    @property
    def keyword(self) -> str:
        """The first word, upper case (``SELECT``, ``BEGIN``...)."""
        words = self.sql.split(None, 1)
        return words[0].upper() if words else ""


def split(con: duckdb.DuckDBPyConnection, text: str) -> list[Statement]:
    """The statements of ``text`` (none for an empty query).

    Text DuckDB cannot parse is one :data:`UNPARSED` statement: PostgreSQL-only statements are
    answered by :func:`postgres_answer`, anything else fails with DuckDB's syntax error when run.

    >>> [(s.sql, s.kind, s.parameters) for s in split(duckdb.connect(), "SELECT $2; BEGIN;")]
    [('SELECT $2', 'SELECT', 2), ('BEGIN', 'TRANSACTION', 0)]
    >>> split(duckdb.connect(), "SET x = ';'; DISCARD ALL")[1]
    Statement(sql='DISCARD ALL', kind='UNPARSED', parameters=0)
    """
    try:
        return [_classified(con, sql) for sql in sql_text.statements(text)]
    except sql_text.SqlTextTooLong as err:
        raise PgError("54000", str(err)) from None


def _classified(con: duckdb.DuckDBPyConnection, sql: str) -> Statement:
    """One statement with its kind and number of parameters."""
    if len(sql) > sql_text.MAX_TOKENIZED:  # DuckDB's parser would hold the GIL for seconds
        word = Statement(sql, "").keyword
        kind = "SELECT" if word.startswith(_QUERY_WORDS) else word
        return Statement(sql, kind, max((int(n) for n in _PARAMETER.findall(sql)), default=0))
    try:
        parsed = con.extract_statements(sql)
    except duckdb.ParserException:
        parsed = []
    if len(parsed) != 1:
        tokens = sql_text.tokens(sql) or []
        numbers = [int(number.text) for dollar, number in zip(tokens, tokens[1:])
                   if dollar.token_type == TokenType.PARAMETER and number.token_type == TokenType.NUMBER
                   and number.start == dollar.end + 1 and number.text.isdigit()]
        return Statement(sql, UNPARSED, max(numbers, default=0))
    return Statement(sql, parsed[0].type.name,
                     max((int(p) for p in parsed[0].named_parameters if p.isdigit()), default=0))


_OBJECT_WORDS = {"OR", "REPLACE", "TEMP", "TEMPORARY", "UNIQUE", "IF", "NOT", "EXISTS", "PERSISTENT"}


def command_tag(statement: Statement, count: int | None) -> str:
    """The CommandComplete tag of a statement that returned no rows (``count``: rows changed).

    >>> command_tag(Statement("insert into t values (1)", "INSERT"), 1)
    'INSERT 0 1'
    >>> command_tag(Statement("create or replace view v as select 1", "CREATE"), None)
    'CREATE VIEW'
    """
    words = statement.sql.upper().split()
    first = words[0] if words else ""
    if first == "INSERT":
        return f"INSERT 0 {count or 0}"
    if first in ("UPDATE", "DELETE", "COPY", "MERGE"):
        return f"{first} {count or 0}"
    if first in ("CREATE", "DROP", "ALTER"):
        rest = [w for w in words[1:] if w not in _OBJECT_WORDS]
        return f"{first} {rest[0]}" if rest else first
    if first == "START":
        return "START TRANSACTION"
    if first in ("END", "ABORT"):
        return "COMMIT" if first == "END" else "ROLLBACK"
    return first


#: First word of a transaction statement -> its plain DuckDB form.
_TRANSACTION_VERBS = {"BEGIN": "BEGIN", "START": "BEGIN", "COMMIT": "COMMIT", "END": "COMMIT",
                      "ROLLBACK": "ROLLBACK", "ABORT": "ROLLBACK"}


def transaction_verb(statement: Statement) -> str | None:
    """``BEGIN``, ``COMMIT`` or ``ROLLBACK`` for a statement that starts or ends a transaction."""
    if statement.kind not in ("TRANSACTION", UNPARSED) or _TO_SAVEPOINT.search(statement.sql):
        return None  # ROLLBACK TO SAVEPOINT is not a rollback of the transaction (and fails)
    return _TRANSACTION_VERBS.get(statement.keyword)


def transaction_status(statement: Statement, status: str) -> str:
    """The transaction status (``I``, ``T``, ``E``) after ``statement`` ran without error."""
    verb = transaction_verb(statement)
    return status if verb is None else "T" if verb == "BEGIN" else "I"


def duckdb_equivalent(statement: Statement, duckdb_settings: set[str]) -> Statement | None:
    """What DuckDB runs for a PostgreSQL statement it would read otherwise, or None.

    ``SHOW name`` of a DuckDB setting reads the setting (DuckDB's own ``SHOW name`` describes
    a table of that name); ``BEGIN ISOLATION LEVEL ...``, ``COMMIT AND NO CHAIN`` and other
    transaction statements DuckDB cannot parse are plain ``BEGIN``/``COMMIT``/``ROLLBACK``
    (DuckDB transactions are snapshot-isolated whatever the level asked for).

    >>> print(duckdb_equivalent(Statement("SHOW TimeZone", "SELECT"), {"timezone"}).sql)
    SELECT current_setting('timezone')::VARCHAR AS "timezone"
    >>> duckdb_equivalent(Statement("BEGIN ISOLATION LEVEL SERIALIZABLE", UNPARSED), set())
    Statement(sql='BEGIN', kind='TRANSACTION', parameters=0)
    """
    if statement.kind == UNPARSED and (verb := transaction_verb(statement)) is not None:
        return Statement(verb, "TRANSACTION")
    bare = _bare(statement.sql)
    show = _SHOW.fullmatch(bare)
    if not show or show.group(1).lower() not in duckdb_settings:
        return None
    name = show.group(1).lower()
    return Statement(f"SELECT current_setting('{name}')::VARCHAR AS \"{name}\"", "SELECT")


def _setting_value(text: str) -> str:
    """A ``SET`` value as ``SHOW`` gives it back: one quoted string or identifier unquoted
    (sqlglot's reading of the quotes), anything else as written.

    >>> _setting_value("'it''s'"), _setting_value('"x"'), _setting_value("on ")
    ("it's", 'x', 'on')
    """
    found = sql_text.tokens(text) if len(text) <= sql_text.MAX_TOKENIZED else None
    if found is not None and len(found) == 1 and found[0].token_type in (TokenType.STRING,
                                                                         TokenType.IDENTIFIER):
        return found[0].text
    return text.strip()


@dataclass(frozen=True)
class Answer:
    """A reply made here instead of by DuckDB: a tag, and one text value when it is a SHOW."""

    tag: str
    column: str | None = None
    value: str | None = None


def postgres_answer(
    statement: Statement, settings: dict[str, str], duckdb_settings: set[str]
) -> Answer | None:
    """The reply to a PostgreSQL-only statement, or None when DuckDB should run it.

    ``settings`` holds the session's PostgreSQL parameters (by lower-case name); a ``SET`` of
    a parameter DuckDB does not have is stored there, a ``SHOW`` of one is answered from it.

    >>> s = {"server_version": "15.0 (vcfzarr-sql)"}
    >>> postgres_answer(Statement("SET application_name = 'x'", "SET"), s, {"threads"})
    Answer(tag='SET', column=None, value=None)
    >>> s["application_name"], postgres_answer(Statement("SHOW server_version", "SELECT"), s, set())
    ('x', Answer(tag='SHOW', column='server_version', value='15.0 (vcfzarr-sql)'))
    """
    bare = _bare(statement.sql)
    show = _SHOW.fullmatch(bare)
    if show and show.group(1).lower() in settings and show.group(1).lower() not in duckdb_settings:
        return Answer("SHOW", show.group(1).lower(), settings[show.group(1).lower()])
    if statement.kind == UNPARSED and statement.keyword in IGNORED:
        return Answer(statement.keyword)
    assignment = _SET.fullmatch(bare)
    if statement.kind == "SET" and assignment:
        name = assignment.group(1).lower()
        if name not in duckdb_settings:
            settings[name] = _setting_value(assignment.group(2))
            return Answer("SET")
    return None
