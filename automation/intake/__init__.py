"""Intake: the webhook views, the inbox (store once, dedupe, claim, hand over, replay), the
backlog (a topic's burst in one job), the outcomes (written once, failures sorted), the sweeper,
the generic handler contract and sources/ (verify + typed events), and the mail service's
tracking events.

Imports platform and models only: features are reached through the handler registry
(`handling.HANDLERS`) and their `FollowUp`s, never by name.
"""
