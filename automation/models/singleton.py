"""One settings row per concept (reminders, dashboard, safety brake), edited in the admin."""

from typing import Self

from django.db import models


class SingletonSettings(models.Model):
    """A model with exactly one row, pk 1, created with the field defaults on first use."""

    class Meta:
        abstract = True

    @classmethod
    def load(cls) -> Self:
        """The single settings row, created with the defaults on first use."""
        row, _ = cls.objects.get_or_create(pk=1)
        return row
