"""Changing a job from the page or the API: edit its data, duplicate it, add one."""
