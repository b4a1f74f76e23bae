"""Campaigns: many runs in a time budget, the failure database, shrinking."""
