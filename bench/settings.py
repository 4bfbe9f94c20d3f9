"""Bench-only settings: the product's settings with the reference views' URLs added.

Why: the reference views must be served by the same server setup as the product's intake, but
they must never be reachable in production, so only this module points at `bench.urls`.
"""

from elbkerzen.settings import *  # noqa: F403

ROOT_URLCONF = "bench.urls"
