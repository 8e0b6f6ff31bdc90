"""The password's SCRAM secret: scramp is an optional extra, asked for in one line."""

import sys

import pytest

from vcfzarr_sql.errors import VcfZarrError
from vcfzarr_sql.serve.pg.config import Security


def test_a_password_without_scramp_names_the_extra(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "scramp", None)  # import scramp raises ImportError
    assert Security.of().secret is None  # no password: scramp is not needed
    with pytest.raises(VcfZarrError) as raised:
        Security.of(password="s3cret")
    message = str(raised.value)
    assert "\n" not in message and "pip install 'vcfzarr-sql[serve]'" in message


def test_a_password_saslprep_prohibits_is_refused_in_one_line() -> None:
    with pytest.raises(VcfZarrError, match="cannot be used for SCRAM") as raised:
        Security.of(password="bell\x07")
    assert "\n" not in str(raised.value)
