"""What every room stands on: scheduling and queues, workers, metrics, logs, exceptions,
database timeouts, written-out SQL (rows), claims, secrets and connection settings, masking,
alerts and the mail server check, notes, display names, addresses and pseudonyms.

Imports models only, never a feature, intake or ui.
"""
