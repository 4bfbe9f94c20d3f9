"""Schedules for `manage.py rqcron automation.cron`.

RQ 3 evaluates cron expressions in the process's time zone, which Django sets from TIME_ZONE,
so a `0 3 * * *` entry fires at 03:00 Hamburg time in winter and summer.
"""

from rq import cron

from .jobs import catch_up_promotions, sweep_deliveries

cron.register(sweep_deliveries, queue_name="default", interval=60, job_timeout=120)
cron.register(catch_up_promotions, queue_name="default", interval=60, job_timeout=120)
