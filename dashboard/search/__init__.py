"""Searching a queue and acting on what was found: the page and the API."""
