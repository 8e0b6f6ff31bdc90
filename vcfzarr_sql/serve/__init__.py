"""Servers over vcfzarr-sql's DuckDB sessions: the PostgreSQL protocol (:mod:`.pg`) and Arrow
Flight SQL (:mod:`.flight`)."""
