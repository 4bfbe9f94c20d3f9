"""Intake: the webhook views, the inbox (store once, dedupe, claim, run, record the Outcome,
sweep, replay, backlog batches), the generic handler contract and sources/ (verify + typed
events), and the mail service's tracking events.

Imports platform and models only: features are reached through the handler registry
(`handling.HANDLERS`) and their `FollowUp`s, never by name.
"""
