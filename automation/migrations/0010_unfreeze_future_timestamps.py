"""Sender timestamps stored from the future go back to when we recorded them.

The stale guards keep the newest sender timestamp seen (a stock level's, a product's, a
checkout's `updated_at`), so one dated in the far future (year 9999, say) made every real
later message `stale`; one past 9999-12-31 in UTC cannot even be loaded into Python, and the
pages listing it failed. The parsers refuse such timestamps now; this resets the ones stored
before, to the time we recorded the row, so the next real message wins again. The UPDATE runs
in the database: the rows are never loaded.
"""

from datetime import timedelta

from django.db import migrations
from django.db.models import F
from django.utils import timezone

# Later than this after the migration runs is no time a sender could have sent.
MARGIN = timedelta(days=1)


def unfreeze(apps, schema_editor) -> None:
    latest = timezone.now() + MARGIN
    for model_name in ("StockLevel", "Product", "CheckoutState"):
        model = apps.get_model("automation", model_name)
        model.objects.filter(updated_at__gt=latest).update(updated_at=F("recorded_at"))


class Migration(migrations.Migration):
    dependencies = [("automation", "0009_mail_service_suppression")]

    operations = [migrations.RunPython(unfreeze, migrations.RunPython.noop, elidable=True)]
