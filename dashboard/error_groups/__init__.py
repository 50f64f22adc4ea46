"""A queue's failed jobs grouped by error: the page, its actions and the API."""
