"""A job's flow tree: the job page's flow section, its children, the API."""
