"""A queue's workers tab and its limits: the page, the fragment and the API."""
