"""Offers and placement: which task goes on which offer, whether a job fits, why it waits."""
