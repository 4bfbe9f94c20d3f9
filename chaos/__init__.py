"""The chaos day: one seeded shop day delivered with faults to the running system, then checked.

`python -m chaos` (or `make chaos ARGS="..."`) generates the day, starts the whole system on a
private database and Redis, drives the day through it over real HTTP, reconciles, and compares
what the system did with the truth derived from the day's log. Test harness, not product code.
"""
