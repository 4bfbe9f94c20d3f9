"""Promotions (Rabattaktionen): their start and end edges at Berlin instants.

Imports stock (through `stock.apply`), platform and models; never ui.
"""
