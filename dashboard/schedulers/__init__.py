"""A queue's job schedulers tab: the page, its actions and the API."""
