"""Command-line parameters of a chaos run, in one frozen value every module can read."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Params:
    """Size, fault rates, timing and seed of one run; `--short` picks a small, quick day."""

    items: int = 30
    locations: int = 3
    checkouts: int = 60
    seed: int = 20261128
    dup_rate: float = 0.10
    drop_rate: float = 0.05
    late_rate: float = 0.05
    # share of the orders placed before their reminder whose orders/create arrives only after
    # the reminder is due (Shopify's retries of a failed delivery); the first one always does
    late_order_rate: float = 0.2
    window: float = 2.0
    transient_rate: float = 0.10
    long_rate_limit_rate: float = 0.0
    workers: int = 3
    duration: float = 120.0
    redis_restart: bool = True
    kill: bool = True
    maintenance_interval: int = 10
    settle_timeout: float = 150.0
    short: bool = False
    keep: bool = False
    verbose: bool = False

    def describe(self) -> str:
        """One line naming every parameter, for the report."""
        return " ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


SHORT = {
    "items": 8,
    "locations": 2,
    "checkouts": 16,
    "workers": 2,
    "duration": 40.0,
    "maintenance_interval": 5,
}


def parse(argv: list[str] | None = None) -> Params:
    """Parse the command line; explicit options win over the `--short` sizes."""
    parser = argparse.ArgumentParser(
        prog="python -m chaos",
        description="Deliver one seeded shop day with faults to the running system and compare.",
    )
    default = Params()
    parser.add_argument("--items", type=int, help=f"watched inventory items ({default.items})")
    parser.add_argument("--locations", type=int, help=f"locations ({default.locations})")
    parser.add_argument("--checkouts", type=int, help=f"checkouts ({default.checkouts})")
    parser.add_argument("--seed", type=int, default=default.seed, help="seed of day and faults")
    parser.add_argument("--dup-rate", type=float, default=default.dup_rate)
    parser.add_argument("--drop-rate", type=float, default=default.drop_rate)
    parser.add_argument("--late-rate", type=float, default=default.late_rate)
    parser.add_argument("--late-order-rate", type=float, default=default.late_order_rate)
    parser.add_argument(
        "--window", type=float, default=default.window, help="shuffle window in seconds"
    )
    parser.add_argument(
        "--transient-rate",
        type=float,
        default=default.transient_rate,
        help="share of Google Ads calls failing transiently",
    )
    parser.add_argument(
        "--long-rate-limit-rate",
        type=float,
        default=default.long_rate_limit_rate,
        help="share of Google Ads calls rate-limited with a retry delay over the backoff cap",
    )
    parser.add_argument("--workers", type=int, help=f"RQ workers ({default.workers})")
    parser.add_argument(
        "--duration", type=float, help=f"real seconds the day's stream takes ({default.duration})"
    )
    parser.add_argument("--no-redis-restart", action="store_true")
    parser.add_argument("--no-kill", action="store_true")
    parser.add_argument(
        "--maintenance-interval",
        type=int,
        help=f"RQ worker maintenance interval, seconds ({default.maintenance_interval}; RQ: 600)",
    )
    parser.add_argument(
        "--settle-timeout",
        type=float,
        default=default.settle_timeout,
        help="seconds to wait for the system to drain",
    )
    parser.add_argument("--short", action="store_true", help="a small day for the test suite")
    parser.add_argument(
        "--keep", action="store_true", help="keep the chaos database for inspection"
    )
    parser.add_argument("--verbose", action="store_true", help="show the processes' logs")
    args = parser.parse_args(argv)
    sizes = SHORT if args.short else {}
    chosen = {
        name: value if value is not None else sizes.get(name, getattr(default, name))
        for name, value in (
            ("items", args.items),
            ("locations", args.locations),
            ("checkouts", args.checkouts),
            ("workers", args.workers),
            ("duration", args.duration),
            ("maintenance_interval", args.maintenance_interval),
        )
    }
    params = Params(
        **chosen,
        seed=args.seed,
        dup_rate=args.dup_rate,
        drop_rate=args.drop_rate,
        late_rate=args.late_rate,
        late_order_rate=args.late_order_rate,
        window=args.window,
        transient_rate=args.transient_rate,
        long_rate_limit_rate=args.long_rate_limit_rate,
        redis_restart=not args.no_redis_restart,
        kill=not args.no_kill,
        settle_timeout=args.settle_timeout,
        short=args.short,
        keep=args.keep,
        verbose=args.verbose,
    )
    _check(parser, params)
    return params


def _check(parser: argparse.ArgumentParser, params: Params) -> None:
    """Refuse values the day cannot be laid out with."""
    for name in (
        "dup_rate",
        "drop_rate",
        "late_rate",
        "late_order_rate",
        "transient_rate",
        "long_rate_limit_rate",
    ):
        if not 0 <= getattr(params, name) <= 0.5:
            parser.error(f"--{name.replace('_', '-')} must be between 0 and 0.5")
    if params.items < 2 or params.locations < 2 or params.checkouts < 0:
        parser.error("need at least 2 items and 2 locations")
    if params.workers < 1 or params.window < 0:
        parser.error("need at least one worker and a non-negative window")
    if params.duration < 30:
        parser.error("--duration must be at least 30 seconds")
