"""Reconcile read time: `ShopifyAdmin.fetch_levels` against a Standard-plan cost bucket.

Why: the nightly reconcile reads every inventory level from Shopify, and Shopify meters GraphQL by
calculated query cost (Standard plan: a 1,000-point bucket refilled at 100 points per second).
Whatever the adapter does, the bucket allows no faster than (total actual cost − initial bucket) ÷
restore rate: the throttle floor. This measures how close the adapter's pacing gets to it, over
the real HTTP path against the local stand-in (tests/support/shopify_standin.py) on a real clock.
Target: elapsed ≤ 1.2 × the floor.

Run from the project root: `python bench/reconcile.py [--items 2000] [--locations 3]`.
No Django, no database: the adapter takes and returns plain values. With the defaults the floor
alone is about 110 s (2,000 items × 6 points); `--items 1000` takes about a minute.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 1.2
FIRST_ITEM_ID = 808950810
FIRST_LOCATION_ID = 24826418
UPDATED_AT = "2026-11-02T09:30:00Z"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000, help="inventory items (default 2000)")
    parser.add_argument("--locations", type=int, default=3, help="levels per item (default 3)")
    parser.add_argument("--bucket", type=float, default=1000.0, help="maximumAvailable points")
    parser.add_argument("--restore-rate", type=float, default=100.0, help="points per second")
    parser.add_argument("--batch-size", type=int, default=50, help="adapter batch_size")
    parser.add_argument("--levels-per-item", type=int, default=50, help="adapter page size")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run once, print the table, exit 0 on PASS and 1 on FAIL."""
    return 0 if collect(argv)["passed"] else 1


def collect(argv: list[str] | None = None) -> dict:
    """Run once and print the table as `main` does; return the numbers for `python -m bench`."""
    args = parse_args(argv)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from automation.shopify.queries import ShopifyAdmin
    from tests.support.shopify_standin import TOKEN, ShopifyStandIn

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # one access-log line per query

    standin = ShopifyStandIn(maximum_available=args.bucket, restore_rate=args.restore_rate)
    ids = [FIRST_ITEM_ID + n for n in range(args.items)]
    for item_id in ids:
        standin.add_item(
            item_id,
            *[
                (FIRST_LOCATION_ID + n, (item_id + n) % 17, UPDATED_AT)
                for n in range(args.locations)
            ],
        )

    with standin.serve() as base_url:
        admin = ShopifyAdmin(
            base_url,
            TOKEN,
            batch_size=args.batch_size,
            levels_per_item=args.levels_per_item,
        )
        start = time.monotonic()
        levels = sum(1 for _ in admin.fetch_levels(ids))
        elapsed = time.monotonic() - start
        admin.close()

    expected = args.items * args.locations
    requests = standin.requests
    total_cost = standin.total_actual_cost
    floor = max(0.0, (total_cost - args.bucket) / args.restore_rate)
    last = requests[-1] if requests else None
    tail = (last.requested_cost - last.actual_cost) / args.restore_rate if last else 0.0
    throttled = sum(r.answer in {"THROTTLED", "429"} for r in requests)
    if floor > 0:
        ratio: float | None = elapsed / floor
        passed = ratio <= TARGET_RATIO
    else:  # the initial bucket covers everything: any waiting at all would be wrong
        ratio = None
        passed = admin.waited == 0
    passed = passed and levels == expected

    rows = [
        ("items × locations", f"{args.items} × {args.locations}"),
        ("levels returned", f"{levels} (expected {expected})"),
        ("bucket", f"{args.bucket:g} points, {args.restore_rate:g}/s"),
        ("queries", f"{len(requests)}"),
        ("  nodes(ids:)", f"{sum(r.root == 'nodes' for r in requests)}"),
        ("  inventoryItem(id:)", f"{sum(r.root == 'inventoryItem' for r in requests)}"),
        ("  THROTTLED or 429", f"{throttled}"),
        ("total actual cost", f"{total_cost} points"),
        ("max requested cost", f"{max((r.requested_cost for r in requests), default=0)} points"),
        (
            "throttle floor",
            f"{floor:.2f} s  = ({total_cost} − {args.bucket:g}) ÷ {args.restore_rate:g}",
        ),
        ("unavoidable tail", f"{tail:.2f} s  (last query's requested − actual cost)"),
        ("adapter waited", f"{admin.waited:.2f} s"),
        ("elapsed", f"{elapsed:.2f} s"),
        ("elapsed ÷ floor", f"{ratio:.3f}" if ratio is not None else "n/a (floor is 0)"),
        ("target", f"≤ {TARGET_RATIO} × floor"),
        ("result", "PASS" if passed else "FAIL"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    return {
        "items": args.items,
        "locations": args.locations,
        "levels": levels,
        "expected": expected,
        "queries": len(requests),
        "throttled": throttled,
        "total_cost": total_cost,
        "floor": floor,
        "waited": admin.waited,
        "elapsed": elapsed,
        "ratio": ratio,
        "target": TARGET_RATIO,
        "passed": passed,
    }


if __name__ == "__main__":
    sys.exit(main())
