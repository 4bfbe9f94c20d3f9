"""Test harness, not product code: run a management command aimed at the chaos Ads stand-in.

`python -m chaos.worker rqworker ...` and `python -m chaos.worker reconcile` run the very same
management commands as production, with one difference:
`automation.google_ads.statuses.google_client` returns a GoogleAdsClient built offline for the local
gRPC stand-in (`CHAOS_ADS_ENDPOINT`, trusted via GRPC_DEFAULT_SSL_ROOTS_FILE_PATH), because the
production client refreshes OAuth over the net.

`ChaosWorker` is the product's worker class with the maintenance interval from
CHAOS_RQ_MAINTENANCE_INTERVAL: the run compresses RQ's 10-minute maintenance cadence (which
restarts a scheduler that died with its Redis connection and retries abandoned jobs) as it
compresses the reminder delay.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

from automation.platform.workers import Worker


class ChaosWorker(Worker):
    """The product's worker class with the maintenance interval the run compresses."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        interval = os.environ.get("CHAOS_RQ_MAINTENANCE_INTERVAL")
        if interval:
            kwargs.setdefault("maintenance_interval", int(interval))
        super().__init__(*args, **kwargs)


@functools.cache
def _standin_client() -> Any:
    """The real GoogleAdsClient, offline, for the stand-in (as tests/support/ads_standin.py builds
    it)."""
    from google.ads.googleads.client import GoogleAdsClient
    from google.oauth2.credentials import Credentials

    from automation.google_ads.adapter import API_VERSION
    from tests.support.ads_standin import DEVELOPER_TOKEN, LOGIN_CUSTOMER_ID

    return GoogleAdsClient(
        credentials=Credentials(token="x"),  # noqa: S106 (the stand-in checks no token)
        developer_token=DEVELOPER_TOKEN,
        login_customer_id=LOGIN_CUSTOMER_ID,
        use_proto_plus=True,
        endpoint=os.environ["CHAOS_ADS_ENDPOINT"],
        version=API_VERSION,
    )


def main(argv: list[str]) -> None:
    """Set Django up, point the Ads client at the stand-in, run the command like manage.py."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "elbkerzen.settings")
    import django

    django.setup()
    from django.core.management import execute_from_command_line

    from automation.google_ads import statuses as ads

    ads.google_client = _standin_client
    execute_from_command_line(["manage.py", *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
