"""What every room stands on: scheduling and queues, workers, metrics, health, logs,
exceptions, secrets and connection settings, alerts, notes and display names.

Imports models only, never a feature, intake or ui.
"""
