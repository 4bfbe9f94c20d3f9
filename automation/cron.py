"""Schedules for `manage.py rqcron automation.cron`.

RQ 3 evaluates cron expressions in the process's time zone, which Django sets from TIME_ZONE,
so the `0 3 * * *` entry fires at 03:00 Hamburg time in winter and summer. Interval entries
run once when rqcron starts, so an overdue nightly run is caught up at start.
"""

from rq import cron

from automation.jobs import (
    catch_up_promotions,
    catch_up_reminders,
    nightly_reconcile,
    reconcile_if_overdue,
    send_held_alerts,
    sweep_deliveries,
)

cron.register(sweep_deliveries, queue_name="default", interval=60, job_timeout=120)
cron.register(catch_up_promotions, queue_name="default", interval=60, job_timeout=120)
cron.register(catch_up_reminders, queue_name="default", interval=60, job_timeout=120)
cron.register(send_held_alerts, queue_name="default", interval=300, job_timeout=120)
cron.register(nightly_reconcile, queue_name="default", cron="0 3 * * *", job_timeout=3600)
cron.register(reconcile_if_overdue, queue_name="default", interval=3600, job_timeout=3600)
