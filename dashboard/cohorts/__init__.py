"""Recent actions: what became of the jobs an action moved (page, panel, API)."""
